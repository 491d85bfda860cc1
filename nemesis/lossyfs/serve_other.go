//go:build !linux

package lossyfs

import (
	"errors"
	"io"
)

// Serve needs Linux's FUSE.
func Serve(dir, disk, socket string, _ Options, log io.Writer) error {
	return errors.New("the filesystem layer runs on Linux only")
}
