//go:build unix

package history

import "golang.org/x/sys/unix"

// Monotonic reads the kernel's CLOCK_MONOTONIC in nanoseconds. Every
// process on one kernel reads the same clock — containers included, as
// Docker gives them no time namespace — so an agent's readings can be
// placed on the harness's timeline (see Recorder.FromMonotonic).
func Monotonic() (int64, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, false
	}
	return ts.Nano(), true
}
