package harness

import (
	"context"
	"fmt"

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
type inProcess struct {
	registry.InProcess
	leaseCheck string
}

// NewClient opens the backend's in-process client, set up for the run's
// lease check as an agent's client is.
func (s inProcess) NewClient(ctx context.Context, slot int) (backends.Client, error) {
	c, err := s.InProcess.NewClient(ctx, slot)
	if err != nil {
		return nil, err
	}
	if err := registry.ApplyLeaseCheck(c, s.leaseCheck); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (s inProcess) Freezer() nemesis.Freezer { return s.InProcess }

// open sets up the system the test asks for.
func (s systemSetup) open(ctx context.Context) (System, error) {
	cfg, b := &s.t.cfg, s.t.info
	switch {
	case len(cfg.Endpoints) > 0:
		return s.openEndpoints(ctx)
	case cfg.Hosts != "":
		return s.openHosts(ctx)
	case cfg.Cluster == registry.ClusterInProcess && b.InProcess != nil:
		return inProcess{b.InProcess(s.t.setup("")), cfg.LeaseCheck}, nil
	case cfg.Cluster == registry.ClusterDocker:
		return s.openDocker(ctx)
	}
	return nil, fmt.Errorf("backend %s on cluster %s is not available in this build", cfg.Backend, cfg.Cluster)
}
