package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
)

// LoopResult is what `check loop` prints: the bare client loop's numbers,
// the yardstick for the harness's own overhead.
type LoopResult struct {
	Acquires int                           `json:"acquires"`
	Seconds  float64                       `json:"seconds"`
	Millis   map[string]map[string]float64 `json:"ms"` // f -> p50, p99
	// Samples are every op's latency in ms by f, so loops in several
	// containers can be merged.
	Samples map[string][]float64 `json:"samples"`
}

func newLoopCmd() *cobra.Command {
	var specJSON string
	var clients int
	var duration time.Duration
	cmd := &cobra.Command{
		Use:    "loop",
		Short:  "Run lock → read → write → release in a bare loop, no harness, and print latencies (a benchmark's yardstick)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var spec backends.ClientSpec
			if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
				return usageErr("--spec: %v", err)
			}
			lat := map[string][]time.Duration{}
			var mu sync.Mutex
			acquires := 0
			deadline := time.Now().Add(duration)
			var wg sync.WaitGroup
			for i := 0; i < clients; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					c, err := registry.OpenClient(context.Background(), spec)
					if err != nil {
						fmt.Fprintln(cmd.ErrOrStderr(), err)
						return
					}
					defer c.Close()
					timed := func(f string, op func(ctx context.Context) error) error {
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						defer cancel()
						start := time.Now()
						err := op(ctx)
						mu.Lock()
						lat[f] = append(lat[f], time.Since(start))
						mu.Unlock()
						return err
					}
					for time.Now().Before(deadline) {
						var tok uint64
						if err := timed("acquire", func(ctx context.Context) (err error) { tok, err = c.Acquire(ctx, "k0"); return }); err != nil {
							continue
						}
						mu.Lock()
						acquires++
						mu.Unlock()
						var v int64
						if timed("read", func(ctx context.Context) (err error) { v, err = c.Read(ctx, "k0", tok); return }) == nil {
							time.Sleep(10 * time.Millisecond)
							timed("write", func(ctx context.Context) error { return c.Write(ctx, "k0", tok, v, v+1) })
						}
						timed("release", func(ctx context.Context) error { return c.Release(ctx, "k0") })
					}
				}()
			}
			wg.Wait()
			res := LoopResult{Acquires: acquires, Seconds: duration.Seconds(), Millis: map[string]map[string]float64{}, Samples: map[string][]float64{}}
			for f, ds := range lat {
				sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
				q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))]) / 1e6 }
				res.Millis[f] = map[string]float64{"p50": q(0.5), "p99": q(0.99)}
				for _, d := range ds {
					res.Samples[f] = append(res.Samples[f], float64(d)/1e6)
				}
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
		},
	}
	cmd.Flags().StringVar(&specJSON, "spec", "", "the clients' spec as JSON")
	cmd.Flags().IntVar(&clients, "clients", 5, "concurrent clients")
	cmd.Flags().DurationVar(&duration, "duration", 10*time.Second, "how long to loop")
	return cmd
}
