package harness

import (
	"context"
	"fmt"
	"io"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/memory"
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

// inProcess adapts the memory backend's in-process system.
type inProcess struct{ *memory.InProcess }

func (s inProcess) Freezer() nemesis.Freezer { return s.InProcess }
func (s inProcess) Info() map[string]string {
	return map[string]string{"lock service": "memory lease service (in process)", "storage node": "fenced store (in process), fencing " + string(s.Store.Mode())}
}
func (s inProcess) Close(context.Context) error {
	s.ThawAll()
	return nil
}

// openSystem sets up what cfg asks for.
func openSystem(ctx context.Context, cfg *Config, dir string, logf func(string, ...any), progress io.Writer) (System, error) {
	mode, err := fenced.ParseMode(cfg.Fencing)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.Backend == "memory" && cfg.Cluster == "inprocess":
		ip := memory.NewInProcess(cfg.LeaseTTL, mode)
		if cfg.NoNetworkDelay {
			ip.Delay = 0
		}
		return inProcess{ip}, nil
	case cfg.Cluster == "docker":
		return openDocker(ctx, cfg, dir, logf, progress)
	}
	return nil, fmt.Errorf("backend %s on cluster %s is not available in this build", cfg.Backend, cfg.Cluster)
}
