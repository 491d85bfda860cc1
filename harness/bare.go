package harness

import (
	"context"
	"io"
	"os"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/runstore"
)

// Bare is the Docker system of a test set up with no test on it: the
// cluster with its servers started, the clients' spec, and clients on
// demand, nothing recorded and no fault. It is bench's door in, for the
// numbers that measure what the harness adds to a bare client (bench's
// yardstick.go); a run never uses it.
type Bare struct {
	s   *dockerSystem
	dir string
}

// SetUpBare resolves cfg (its store is never written, so it is not
// checked) and sets up its Docker system as a run does before its
// workload. Close tears it down.
func SetUpBare(ctx context.Context, cfg Config) (*Bare, error) {
	t, err := resolve(cfg, nil)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fencecheck-bare")
	if err != nil {
		return nil, err
	}
	setup := systemSetup{t: t, st: &runState{}, dir: runstore.Run(dir), logf: func(string, ...any) {}, progress: io.Discard}
	s, err := setup.openDocker(ctx)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &Bare{s: s, dir: dir}, nil
}

// Cluster is the test's machines, to exec in.
func (b *Bare) Cluster() nodes.Nodes { return b.s.nodes }

// ClientSpec is the spec every client of the test is made from.
func (b *Bare) ClientSpec() backends.ClientSpec { return b.s.spec }

// NewClient starts the agent of client slot (from 1) in its container and
// returns the harness's side of it.
func (b *Bare) NewClient(ctx context.Context, slot int) (backends.Client, error) {
	return b.s.NewClient(ctx, slot)
}

// Close tears the system down and removes its scratch directory.
func (b *Bare) Close(ctx context.Context) error {
	defer os.RemoveAll(b.dir)
	return b.s.Close(ctx)
}
