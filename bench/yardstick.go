package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
)

// yardstick sets up the Docker system cfg describes and runs `check loop`
// (a bare client loop: no harness, no agent, no recording) with the run's
// client spec for d — one loop process with one client in each client
// container, the topology of a test, where every client is its own process
// — then tears everything down and returns the loops' numbers merged.
// Benchmarks compare it with what the harness records.
func yardstick(ctx context.Context, cfg harness.Config, d time.Duration) (*loopNumbers, error) {
	s, err := harness.SetUpBare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer s.Close(context.Background())
	spec, _ := json.Marshal(s.ClientSpec())
	type loopOut struct {
		Acquires int                  `json:"acquires"`
		Samples  map[string][]float64 `json:"samples"`
	}
	outs := make([]loopOut, cfg.Clients)
	errs := make([]error, cfg.Clients)
	var wg sync.WaitGroup
	for i := range cfg.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Cluster().Exec(ctx, history.SlotName(i+1), []string{engine.BinaryPath, "loop", "--spec", string(spec),
				"--clients", "1", "--duration", d.String()})
			switch {
			case err != nil:
				errs[i] = err
			case res.ExitCode != 0:
				errs[i] = fmt.Errorf("check loop in c%d exited %d: %s", i+1, res.ExitCode, res.Stderr)
			default:
				errs[i] = json.Unmarshal([]byte(res.Stdout), &outs[i])
			}
		}()
	}
	wg.Wait()
	n := &loopNumbers{Seconds: d.Seconds(), Millis: map[string][2]float64{}}
	all := map[string][]float64{}
	for i, o := range outs {
		if errs[i] != nil {
			return nil, errs[i]
		}
		n.Acquires += o.Acquires
		for f, ms := range o.Samples {
			all[f] = append(all[f], ms...)
		}
	}
	for f, ms := range all {
		sort.Float64s(ms)
		n.Millis[f] = [2]float64{ms[(len(ms)-1)/2], ms[(len(ms)-1)*99/100]}
	}
	return n, nil
}

// loopNumbers are the bare loops' merged numbers.
type loopNumbers struct {
	Acquires int
	Seconds  float64
	Millis   map[string][2]float64 // f -> p50, p99 in ms
}

// agentRoundTrips times n round trips of a no-op request to an agent in a
// client container (the agent answers an unknown f at once), the cost the
// exec stream adds to every op.
func agentRoundTrips(ctx context.Context, cfg harness.Config, n int) (p50, p99 time.Duration, err error) {
	s, err := harness.SetUpBare(ctx, cfg)
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
