package harness

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// checkRelease: a --server-version that is none of the backend's named
// builds must be an exact release it takes (Releases.Check); whether
// the proxy serves it is asked later, once the rest is valid
// (checkReleaseServed).
func checkRelease(backend, v string, b registry.Info) error {
	if err := b.Releases.Check(v); err != nil {
		return usage.Errorf("server-version", "backend %s has no server version %q (accepted: %s, %s for %s, or %s): %v", backend, v,
			strings.Join(b.Versions, ", "), registry.DefaultVersion, b.Versions[0], b.Releases.What, err)
	}
	return nil
}

// releaseQuestionTime bounds the question to the module proxy.
const releaseQuestionTime = 90 * time.Second

// checkReleaseServed asks the Go module proxy, before anything of the
// run is created, whether it serves the exact release the run names (a
// release already in the cache is not asked about again): an unserved
// one is bad input, refused with what is accepted; a proxy that cannot
// be asked is an error that says so. Nothing is asked for a named build
// or a --server-image (which decides the version itself).
func (t *Test) checkReleaseServed() error {
	c, b := &t.cfg, t.info
	if b.Releases == nil || c.ServerImage != "" || slices.Contains(b.Versions, c.ServerVersion) || c.ServerVersion == registry.DefaultVersion {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseQuestionTime)
	defer cancel()
	notServed, err := b.Releases.Served(ctx, c.ServerVersion)
	switch {
	case notServed != "":
		return usage.Errorf("server-version", "backend %s: %s (accepted: %s, or %s; ask for a release the proxy serves)", c.Backend, notServed,
			strings.Join(b.Versions, ", "), b.Releases.What)
	case err != nil:
		return fmt.Errorf("--server-version %s: %w", c.ServerVersion, err)
	}
	return nil
}
