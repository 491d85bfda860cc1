package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

func quiet() harness.Signals {
	return harness.Signals{Stop: context.Background(), Abort: context.Background()}
}

func tempStore() string {
	d, err := os.MkdirTemp("", "fencecheck-bench")
	if err != nil {
		panic(err)
	}
	return d
}

// harnessRows measures how many ops per second the harness records
// against the in-process backend with no simulated network delay.
func harnessRows() []row {
	store := tempStore()
	defer os.RemoveAll(store)
	cfg := harness.Config{Backend: "memory", Fencing: "all", Nemesis: []string{"none"}, Clients: 10, Keys: 10,
		TimeLimit: 3 * time.Second, LeaseTTL: 2 * time.Second, NemesisInterval: time.Second, CheckTimeout: time.Minute,
		Store: store, Seed: 1, NoNetworkDelay: true}
	out, err := harness.Run(quiet(), cfg, nil)
	if err != nil {
		return []row{{name: "harness: ops recorded per second, in-process, 10 clients", value: -1, note: err.Error()}}
	}
	events, _ := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	ops, _ := history.Pair(events)
	rate := float64(len(ops)) / cfg.TimeLimit.Seconds()
	return []row{{name: "harness: ops recorded per second, in-process, 10 clients", value: rate, unit: "op/s",
		goal: "> 50000", pass: rate > 50000, note: fmt.Sprintf("%d ops in %s, verdict %s", len(ops), cfg.TimeLimit, out.Result.Verdict)}}
}

// detection runs n tests at once and returns how many were invalid and
// the median time from the start of the workload to the first violation.
func detection(cfg harness.Config, n int) (found int, median time.Duration, err error) {
	var mu sync.Mutex
	var firsts []time.Duration
	var wg sync.WaitGroup
	var firstErr error
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cfg
			c.Seed = int64(1000 + i)
			c.Store = tempStore()
			defer os.RemoveAll(c.Store)
			out, err := harness.Run(quiet(), c, nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				firstErr = err
				return
			}
			if out.Result.Verdict != models.Invalid {
				return
			}
			found++
			if t, ok := firstViolation(out); ok {
				firsts = append(firsts, t)
			}
		}()
	}
	wg.Wait()
	sort.Slice(firsts, func(i, j int) bool { return firsts[i] < firsts[j] })
	if len(firsts) > 0 {
		median = firsts[len(firsts)/2]
	}
	return found, median, firstErr
}

// firstViolation is when the earliest culprit op completed.
func firstViolation(out *harness.Outcome) (time.Duration, bool) {
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		return 0, false
	}
	ops, _ := history.Pair(events)
	byIndex := map[int64]history.Op{}
	for _, o := range ops {
		byIndex[o.InvokeIndex] = o
	}
	best := time.Duration(-1)
	for _, k := range out.Result.Keys {
		if len(k.Culprits) == 0 {
			continue
		}
		o := byIndex[k.Culprits[0]]
		t := time.Duration(o.Done)
		if best < 0 || t < best {
			best = t
		}
	}
	return best, best >= 0
}

func detectionRows() []row {
	var rows []row
	for _, nem := range []string{"pause-holder", "pause"} {
		cfg := harness.Config{Backend: "memory", Fencing: "none", Nemesis: []string{nem}, Clients: 5, Keys: 1,
			TimeLimit: 10 * time.Second, LeaseTTL: 2 * time.Second, Work: 10 * time.Millisecond,
			NemesisInterval: 2 * time.Second, CheckTimeout: time.Minute}
		found, med, err := detection(cfg, 20)
		note := fmt.Sprintf("median time to first violation %.1f s", med.Seconds())
		if err != nil {
			note += "; error: " + err.Error()
		}
		rows = append(rows, row{name: "detection, memory in-process, " + nem + ", 20 runs of 10 s", value: float64(found) / 20 * 100,
			unit: "%", goal: ">= 95%", pass: found >= 19, note: note})
	}
	return rows
}
