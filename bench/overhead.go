package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/compare"
	"github.com/fencecheck/fencecheck/harness"
)

// overheadRows measures what a run costs beyond its workload — its wall
// time minus its time limit — on each Docker backend, side by side in one
// process: runs on new clusters (--fresh-cluster) and runs that take the
// cluster the run before them left (harness.Clusters, the default of
// compare and --test-count). Each side is the median of runs runs of a 5 s
// workload without faults; the warm side's first run, which makes its
// cluster, is not counted.
func overheadRows(runs int) []row {
	var rows []row
	for _, backend := range []string{"etcd", "zookeeper", "postgres", "redis"} {
		cfg := harness.Config{Backend: backend, Cluster: "docker", Nodes: 3, Fencing: "all", Nemesis: []string{"none"}, Clients: 5, Keys: 1,
			TimeLimit: 5 * time.Second, LeaseTTL: 2 * time.Second, Work: 10 * time.Millisecond, NemesisInterval: 5 * time.Second,
			CheckTimeout: time.Minute, Seed: 1}
		fresh, err := overheads(nil, cfg, runs)
		if err != nil {
			rows = append(rows, failedRow(fmt.Sprintf("%s: a run's overhead, new cluster", backend), err))
			continue
		}
		p := harness.NewClusters()
		warm, err := overheads(p, cfg, runs+1)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		p.Close(ctx)
		cancel()
		if err != nil {
			rows = append(rows, failedRow(fmt.Sprintf("%s: a run's overhead, warm cluster", backend), err))
			continue
		}
		warm = warm[1:]
		f, w := median(fresh), median(warm)
		rows = append(rows,
			row{name: fmt.Sprintf("%s: a run's overhead beyond its workload, new cluster", backend), value: f, unit: "s", goal: "measured", pass: true,
				note: fmt.Sprintf("median of %d runs of 5 s: %s", len(fresh), secondsList(fresh))},
			row{name: fmt.Sprintf("%s: a run's overhead beyond its workload, warm cluster", backend), value: w, unit: "s", goal: "<= 5 s", pass: w <= 5,
				note: fmt.Sprintf("median of %d runs of 5 s after the first: %s; %.0f%% of the new cluster's", len(warm), secondsList(warm), w/f*100)})
	}
	return rows
}

// overheads runs cfg n times (seeds 1..n), through p when it is not nil,
// and returns each run's wall time minus its time limit, in seconds.
func overheads(p *harness.Clusters, cfg harness.Config, n int) ([]float64, error) {
	var out []float64
	for i := range n {
		c := cfg
		c.Seed = int64(i + 1)
		c.Store = tempStore()
		c.FreshCluster = p == nil
		start := time.Now()
		_, err := p.Run(quiet(), c, nil)
		wall := time.Since(start)
		os.RemoveAll(c.Store)
		if err != nil {
			return nil, err
		}
		out = append(out, (wall - c.TimeLimit).Seconds())
	}
	return out, nil
}

// presetRows runs the jepsen-etcd preset with runs runs per cell, on
// new clusters and then on warm ones, and prints both wall times.
func presetRows(runs int) []row {
	var rows []row
	var walls [2]float64
	for i, fresh := range []bool{true, false} {
		spec := compare.Spec{Preset: "jepsen-etcd", Seed: 1, Runs: runs}
		spec.Base.FreshCluster = fresh
		m, err := compare.Expand(spec)
		if err != nil {
			return []row{failedRow("jepsen-etcd preset", err)}
		}
		dir := tempStore()
		start := time.Now()
		c, err := compare.Run(quiet(), m, dir, nil)
		walls[i] = time.Since(start).Seconds()
		os.RemoveAll(dir)
		name := map[bool]string{true: "new clusters", false: "warm clusters"}[fresh]
		if err == nil && c.Errors > 0 {
			err = fmt.Errorf("%d runs failed", c.Errors)
		}
		if err != nil {
			rows = append(rows, failedRow("jepsen-etcd preset, "+name, err))
			return rows
		}
		rows = append(rows, row{name: fmt.Sprintf("jepsen-etcd preset, %d runs per cell, %s: wall time", runs, name), value: walls[i], unit: "s", goal: "measured", pass: true})
	}
	share := walls[1] / walls[0] * 100
	rows = append(rows, row{name: "jepsen-etcd preset on warm clusters, share of the time on new ones", value: share, unit: "%", goal: "<= 60%", pass: share <= 60})
	return rows
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func secondsList(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(parts, ", ") + " s"
}
