//go:build unix

package lockclient

import "golang.org/x/sys/unix"

// Monotonic reads the kernel's CLOCK_MONOTONIC in nanoseconds; ok is false
// where it cannot be read. Every process on one kernel reads the same
// clock — containers included, as Docker gives them no time namespace — so
// a client's readings (an answer's call and return) can be placed on the
// harness's timeline (see history.Recorder.FromMonotonic), which reads it
// here too.
func Monotonic() (ns int64, ok bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, false
	}
	return ts.Nano(), true
}
