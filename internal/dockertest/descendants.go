package dockertest

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// killDescendants kills every process below this one (a `go build` of a
// server a test was compiling, the compiler processes under it), deepest
// first, before the process ends over a hung test: a panic ends the test
// binary but not its children, and an orphaned compile went on holding
// its build's machine-wide lock while the next test process waited for
// it. It reads /proc; where there is none it does nothing. It returns
// how many processes it signalled.
func killDescendants() int {
	children := map[int][]int{}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parentOf(pid); ok {
			children[ppid] = append(children[ppid], pid)
		}
	}
	var below []int
	var walk func(int)
	walk = func(pid int) {
		for _, c := range children[pid] {
			walk(c)
			below = append(below, c) // a child after its own children
		}
	}
	walk(os.Getpid())
	for _, pid := range below {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	return len(below)
}

// parentOf reads a process's parent from /proc/PID/stat, whose second
// field, the command name in parentheses, may itself hold spaces and
// parentheses: the fields after the last ")" are the state, then the
// parent.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}
