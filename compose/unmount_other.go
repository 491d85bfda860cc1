//go:build !linux

package compose

// unmountUnder does nothing: debootstrap only runs on Linux.
func unmountUnder(string) {}
