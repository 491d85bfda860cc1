//go:build !linux

package images

// unmountUnder does nothing: debootstrap only runs on Linux.
func unmountUnder(string) {}
