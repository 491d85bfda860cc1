package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/nemesis"
)

// Failpoints: a fault that arms failpoints in the servers' code
// (nemesis.Needs.Failpoints) has the backend's servers run their
// failpoint build (registry.Setup.Failpoints) and is told which
// failpoints that build has (nemesis.Settings.Failpoints), read from the
// release's source before anything is created. The harness names neither
// the fault nor the backend.

// failpointListTimeout bounds reading a release's failpoints, which may
// download its source from the Go module proxy the first time.
const failpointListTimeout = 2 * time.Minute

// describeFailpoints tells the faults which failpoints the servers' build
// has, or why it has none.
func (t *Test) describeFailpoints(s *nemesis.Settings) {
	names, port, err := t.failpointNames()
	if err != nil {
		s.NoFailpoints = err.Error()
		return
	}
	s.Failpoints, s.FailpointPort = names, port
}

// failpointNames asks the backend for the failpoints of the test's
// release, and the port of their endpoint.
func (t *Test) failpointNames() ([]string, int, error) {
	fp := t.info.Failpoints
	if fp == nil {
		return nil, 0, fmt.Errorf("backend %s's servers have no failpoint build (backends with one: %s)", t.cfg.Backend, registry.OrList(failpointBackends()))
	}
	ctx, cancel := context.WithTimeout(context.Background(), failpointListTimeout)
	defer cancel()
	setup := t.setup("")
	setup.Failpoints = true
	names, err := fp.List(ctx, setup)
	if err != nil {
		return nil, 0, err
	}
	return names, fp.Port, nil
}

// failpointBackends names the backends whose servers have a failpoint
// build.
func failpointBackends() []string {
	var out []string
	for _, b := range registry.All() {
		if b.Failpoints != nil {
			out = append(out, b.Name)
		}
	}
	return out
}

// checkFailpointBuild refuses failpoints with --server-image: the user's
// image runs its own build, which has none fencecheck can arm.
func (t *Test) checkFailpointBuild() error {
	if !t.kinds.NeedsFailpoints() || t.cfg.ServerImage == "" {
		return nil
	}
	return usage.Errorf("server-image", "%s arms failpoints, which need the servers' failpoint build fencecheck compiles, and --server-image %s runs the image's own build: drop --server-image",
		strings.Join(faultsNeedingFailpoints(t.kinds), ", "), t.cfg.ServerImage)
}

func faultsNeedingFailpoints(ks nemesis.Kinds) []string {
	var out []string
	for _, k := range ks {
		if k.Needs.Failpoints {
			out = append(out, k.Name)
		}
	}
	return out
}

// Failpoints lists the failpoints of the servers cfg describes (its
// backend and --server-version), for `check --failpoint list`: read from
// the release's source, nothing created. An error is a *usage.Error
// saying why there are none.
func Failpoints(cfg Config) ([]string, error) {
	t := lookUp(cfg)
	if !t.known {
		return nil, unknownBackend(cfg.Backend)
	}
	t.cfg.defaults(t.info, t.known, nil)
	if err := t.cfg.checkServerVersion(t.info); err != nil {
		return nil, err
	}
	names, _, err := t.failpointNames()
	if err != nil {
		return nil, usage.Errorf(nemesis.FailpointFlag.Name, "%v", err)
	}
	return names, nil
}
