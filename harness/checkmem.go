package harness

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// MinCheckMemory is the smallest --check-memory accepted.
const MinCheckMemory = 64 << 20

// DefaultCheckMemory is the memory bound a check gets unless told
// otherwise: half of what the machine (or the container's memory limit,
// when lower) has, so a check never takes the machine down, and at least
// 1 GiB when the machine cannot say.
func DefaultCheckMemory() int64 {
	total := memTotal()
	if l := cgroupLimit(); l > 0 && (total == 0 || l < total) {
		total = l
	}
	if total == 0 {
		return 1 << 30
	}
	return max(total/2, MinCheckMemory)
}

// memTotal reads MemTotal from /proc/meminfo (0 when it cannot).
func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// cgroupLimit reads the memory limit of this process's cgroup (v2 or v1);
// 0 when there is none.
func cgroupLimit() int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v <= 0 || v >= 1<<60 {
			continue // "max", or v1's "no limit"
		}
		return v
	}
	return 0
}
