package images

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/fencecheck/fencecheck/internal/buildlock"
)

// fromCacheOrLock returns the kept binary at path, or, when there is none,
// the machine-wide lock on building it (internal/buildlock): the caller
// builds, keeps the result at path, then calls release. A process that
// waited for another's compile of the same thing finds it at path and
// gets it with no lock to release. path "" (no user cache) locks nothing.
func fromCacheOrLock(ctx context.Context, path, what string, progress io.Writer) (b []byte, release func(), err error) {
	if path == "" {
		return nil, func() {}, nil
	}
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		return b, nil, nil
	}
	release, err = buildlock.Acquire(ctx, filepath.Base(path), what, progress)
	if err != nil {
		return nil, nil, err
	}
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		release()
		return b, nil, nil
	}
	return nil, release, nil
}

// lockImage takes the machine-wide lock on building the image tag (or,
// for the node images, nodeImageLock), so that two processes never
// build one image side by side; exists is asked again once the lock is
// held, since the holder waited for has usually just built it.
func lockImage(ctx context.Context, name, what string, progress io.Writer, exists func() (bool, error)) (found bool, release func(), err error) {
	release, err = buildlock.Acquire(ctx, name, what, progress)
	if err != nil {
		return false, nil, err
	}
	found, err = exists()
	if err != nil || found {
		release()
		return found, nil, err
	}
	return false, release, nil
}

// nodeImageLock is the one lock of both node images: the node image's
// build makes the core image first, so building either is one build.
const nodeImageLock = "node-image"
