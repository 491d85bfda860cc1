// Package meminfo reads what the machine says of its memory: a field of
// /proc/meminfo and the memory limit of this process's cgroup. It only
// reads; it never sets a limit (internal/bound does, for a check).
package meminfo

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Field reads one field of /proc/meminfo (e.g. "MemTotal",
// "MemAvailable") in bytes.
func Field(name string) (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == name+":" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: %s: %w", name, err)
			}
			return kb << 10, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("/proc/meminfo has no %s", name)
}

// CgroupLimit reads the memory limit of this process's cgroup (v2 or v1);
// 0 when there is none.
func CgroupLimit() int64 {
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
