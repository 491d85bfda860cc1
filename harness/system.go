package harness

import (
	"context"
	"fmt"
	"io"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/nemesis"
)

// System is the lock service and storage under test, set up for one run.
type System interface {
	// NewClient opens a client for a process running in slot (1-based).
	NewClient(ctx context.Context, slot int) (backends.Client, error)
	// Freezer pauses client slots c1..cN (and, in Docker, nodes).
	Freezer() nemesis.Freezer
	// Info describes the system for the report: versions, image, nodes.
	Info() map[string]string
	// Close heals and tears everything down.
	Close(ctx context.Context) error
}

// inProcess adapts a backend's in-process system: its slots are what the
// nemesis freezes.
type inProcess struct{ registry.InProcess }

func (s inProcess) Freezer() nemesis.Freezer { return s.InProcess }

// openSystem sets up what cfg asks for.
func openSystem(ctx context.Context, cfg *Config, st *runState, dir string, logf func(string, ...any), progress io.Writer) (System, error) {
	b, _ := registry.Lookup(cfg.Backend)
	switch {
	case cfg.Cluster == registry.ClusterInProcess && b.InProcess != nil:
		return inProcess{b.InProcess(cfg.setup(""))}, nil
	case cfg.Cluster == registry.ClusterDocker:
		return openDocker(ctx, cfg, st, dir, logf, progress)
	}
	return nil, fmt.Errorf("backend %s on cluster %s is not available in this build", cfg.Backend, cfg.Cluster)
}
