package dockertest

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A process ended over a hung test takes every process below it along:
// a child, and the child's own child, which an orphaned compile has (go
// build runs the compiler).
func TestKillDescendantsKillsChildrenAndGrandchildren(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc: Linux only") // CI runs on Linux
	}
	pidFile := t.TempDir() + "/grandchild"
	cmd := exec.Command("sh", "-c", "sleep 60 & echo $! > "+pidFile+"; wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var grandchild int
	for deadline := time.Now().Add(10 * time.Second); grandchild == 0; {
		b, _ := os.ReadFile(pidFile)
		grandchild, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		if grandchild == 0 && time.Now().After(deadline) {
			t.Fatal("the shell never started its child")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := killDescendants(); n < 2 {
		t.Errorf("killed %d processes, want the shell and its sleep at least", n)
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the child ended with %v, want killed", err)
	}
	// The grandchild was reparented when the shell died; it must be gone
	// (or a zombie, waiting for its new parent to reap it).
	for deadline := time.Now().Add(5 * time.Second); ; {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(grandchild) + "/stat")
		if err != nil || strings.Contains(string(b), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the grandchild %d is still running: %s", grandchild, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestParentOfReadsACommandNameWithSpacesAndParentheses(t *testing.T) {
	ppid, ok := parentOf(os.Getpid())
	if !ok || ppid != os.Getppid() {
		t.Errorf("parentOf(self) = %d, %v; want %d", ppid, ok, os.Getppid())
	}
}
