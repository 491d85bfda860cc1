package images

import (
	"context"
	"fmt"
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

// serverCompile is one server compile kept in fencecheck's cache.
type serverCompile struct {
	// Name is what is compiled, for the lines about it: "etcd 3.5.4".
	Name, Arch string
	// Path is where the binary is kept ("" without a user cache).
	Path string
	// Step is the compile's step title.
	Step string
	// Build compiles it, its output going to progress.
	Build func(progress io.Writer) ([]byte, error)
}

// compileOnce returns c's binary: kept at c.Path (a line saying so), or
// compiled now as a timed step under the machine-wide lock
// (fromCacheOrLock) and kept there. Every server compile goes through
// it, so each is made once a machine and waited for, not repeated.
func compileOnce(ctx context.Context, out *BuildOutput, c serverCompile) ([]byte, error) {
	b, release, err := fromCacheOrLock(ctx, c.Path, c.Name+"'s compile", out)
	if err != nil {
		return nil, err
	}
	if b != nil {
		fmt.Fprintf(out, "compose: %s (linux/%s) from the cache, %s\n", c.Name, c.Arch, c.Path)
		return b, nil
	}
	defer release()
	step := out.Begin(c.Step)
	b, err = c.Build(step)
	if err != nil {
		return nil, step.Fail(err, ctx.Err() != nil)
	}
	detail, _ := keepCompiled(c.Path, b)
	step.Done(detail)
	return b, nil
}
