package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/fencecheck/fencecheck/compose"
)

// Yardstick sets up the Docker system cfg describes, runs `check loop`
// (a bare client loop, no harness, no agents) with the run's client spec
// in the first client container for d, tears everything down and returns
// the loop's JSON. Benchmarks compare it with what the harness measures.
func Yardstick(ctx context.Context, cfg Config, d time.Duration) ([]byte, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "fencecheck-yardstick")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	s, err := openDocker(ctx, &cfg, dir, func(string, ...any) {}, io.Discard)
	if err != nil {
		return nil, err
	}
	defer s.Close(context.Background())
	spec, _ := json.Marshal(s.spec)
	res, err := s.cluster.Exec(ctx, "c1", []string{compose.BinaryPath, "loop", "--spec", string(spec),
		"--clients", fmt.Sprint(cfg.Clients), "--duration", d.String()})
	if err != nil {
		return nil, err
	}
	if res.ExitCode != 0 {
		return nil, fmt.Errorf("check loop exited %d: %s", res.ExitCode, res.Stderr)
	}
	return []byte(res.Stdout), nil
}

// AgentRoundTrips times n round trips of a no-op request to an agent in a
// client container (the agent answers an unknown f at once), the cost the
// exec stream adds to every op.
func AgentRoundTrips(ctx context.Context, cfg Config, n int) (p50, p99 time.Duration, err error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return 0, 0, err
	}
	dir, err := os.MkdirTemp("", "fencecheck-rtt")
	if err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(dir)
	s, err := openDocker(ctx, &cfg, dir, func(string, ...any) {}, io.Discard)
	if err != nil {
		return 0, 0, err
	}
	defer s.Close(context.Background())
	c, err := s.NewClient(ctx, 1)
	if err != nil {
		return 0, 0, err
	}
	defer c.Close()
	var ds []time.Duration
	for i := 0; i < n; i++ {
		start := time.Now()
		// Release of a key never acquired: the agent answers a definite
		// fail without touching any server.
		c.Release(ctx, "never-held")
		ds = append(ds, time.Since(start))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[n/2], ds[n*99/100], nil
}
