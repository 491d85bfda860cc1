package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"

	"github.com/fencecheck/fencecheck/compare"
	"github.com/fencecheck/fencecheck/harness"
)

// overheadRows measures what a run costs beyond its workload — its wall
// time minus its time limit — on each Docker backend (or a backend's
// deployment: redis:sentinel), side by side in one process: runs on new clusters (--fresh-cluster) and runs that take the
// cluster the run before them left (harness.Clusters, the default of
// compare and --test-count). Each side is the median of runs runs of a 5 s
// workload without faults; the warm side's first run, which makes its
// cluster, is not counted. Beside each warm side it prints what reuse
// itself cost a run: the rewarm (every process of the last run killed, its
// data removed), as the run's check.log says.
func overheadRows(runs int, targets []overheadTarget) []row {
	var rows []row
	for _, t := range targets {
		cfg := harness.Config{Backend: t.backend, Cluster: "docker", Nodes: 3, Fencing: "all", Nemesis: []string{"none"}, Clients: 5, Keys: 1,
			TimeLimit: 5 * time.Second, LeaseTTL: 2 * time.Second, Work: 10 * time.Millisecond, NemesisInterval: 5 * time.Second,
			CheckTimeout: time.Minute, Seed: 1, Recipe: t.recipe, Options: t.options}
		fresh, _, err := overheads(nil, cfg, runs)
		if err != nil {
			rows = append(rows, failedRow(fmt.Sprintf("%s: a run's overhead, new cluster", t.name), err))
			continue
		}
		p := harness.NewClusters()
		warm, rewarms, err := overheads(p, cfg, runs+1)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		p.Close(ctx)
		cancel()
		if err != nil {
			rows = append(rows, failedRow(fmt.Sprintf("%s: a run's overhead, warm cluster", t.name), err))
			continue
		}
		warm, rewarms = warm[1:], rewarms[1:]
		f, w := median(fresh), median(warm)
		rows = append(rows,
			row{name: fmt.Sprintf("%s: a run's overhead beyond its workload, new cluster", t.name), value: f, unit: "s", goal: "measured", pass: true,
				note: fmt.Sprintf("median of %d runs of 5 s: %s", len(fresh), secondsList(fresh))},
			row{name: fmt.Sprintf("%s: a run's overhead beyond its workload, warm cluster", t.name), value: w, unit: "s", goal: "<= 5 s", pass: w <= 5,
				note: fmt.Sprintf("median of %d runs of 5 s after the first: %s; %.0f%% of the new cluster's", len(warm), secondsList(warm), w/f*100)})
		if len(rewarms) == len(warm) {
			r := median(rewarms)
			rows = append(rows, row{name: fmt.Sprintf("%s: making a warm cluster clean for the next run (rewarm)", t.name), value: r, unit: "s", goal: "<= 2 s", pass: r <= 2,
				note: fmt.Sprintf("median of the same %d runs: %s", len(rewarms), secondsList(rewarms))})
		} else {
			rows = append(rows, failedRow(fmt.Sprintf("%s: making a warm cluster clean for the next run (rewarm)", t.name),
				fmt.Errorf("%d of %d warm runs' logs say how long their rewarm took", len(rewarms), len(warm))))
		}
	}
	return rows
}

// overheads runs cfg n times (seeds 1..n), through p when it is not nil,
// and returns each run's wall time minus its time limit, in seconds, and
// the rewarm time of each run whose log names one (the first run's, which
// made its cluster, is 0).
func overheads(p *harness.Clusters, cfg harness.Config, n int) (walls, rewarms []float64, err error) {
	for i := range n {
		c := cfg
		c.Seed = int64(i + 1)
		c.Store = tempStore()
		c.FreshCluster = p == nil
		start := time.Now()
		_, err := p.Run(quiet(), c, nil)
		wall := time.Since(start)
		if p != nil {
			if d, ok := rewarmTime(c.Store); ok {
				rewarms = append(rewarms, d.Seconds())
			} else if i == 0 {
				rewarms = append(rewarms, 0)
			}
		}
		os.RemoveAll(c.Store)
		if err != nil {
			return nil, nil, err
		}
		walls = append(walls, (wall - c.TimeLimit).Seconds())
	}
	return walls, rewarms, nil
}

// rewarmRE is the line a run on a warm cluster logs once it made the
// cluster clean (harness.upCluster).
var rewarmRE = regexp.MustCompile(`reused warm: .* removed in ([0-9.]+[a-zµ]+) `)

// rewarmTime reads, from the one run stored under store, how long its
// rewarm took.
func rewarmTime(store string) (time.Duration, bool) {
	logs, _ := filepath.Glob(filepath.Join(store, "*", "*", "check.log"))
	if len(logs) != 1 {
		return 0, false
	}
	b, err := os.ReadFile(logs[0])
	if err != nil {
		return 0, false
	}
	m := rewarmRE.FindSubmatch(b)
	if m == nil {
		return 0, false
	}
	d, err := time.ParseDuration(string(m[1]))
	return d, err == nil
}

// overheadTarget is one entry of --overhead-backends: a backend, or one
// of its deployments (registry.Info.Deployments: "redis:sentinel" is
// backend redis with --redis-topology sentinel), with the deployment's
// flags and its first recipe.
type overheadTarget struct {
	name    string // as given: "redis", "redis:sentinel"
	backend string
	recipe  string            // "" for the backend's default
	options map[string]string // the deployment's flags; nil for a plain backend
}

// overheadBackends reads --overhead-backends: registered backends that run
// in Docker, each alone (its defaults) or as backend:deployment.
func overheadBackends(list string) ([]overheadTarget, error) {
	var out []overheadTarget
	for _, entry := range strings.Split(list, ",") {
		entry = strings.TrimSpace(entry)
		name, deployment, hasDeployment := strings.Cut(entry, ":")
		b, ok := registry.Lookup(name)
		if !ok || !slices.Contains(b.Clusters, registry.ClusterDocker) {
			return nil, fmt.Errorf("--overhead-backends: %q is not a backend that runs in Docker", name)
		}
		t := overheadTarget{name: entry, backend: name}
		if hasDeployment {
			var names []string
			found := false
			for _, d := range b.Deployments {
				names = append(names, name+":"+d.Name)
				if d.Name == deployment {
					found = true
					t.options = maps.Clone(d.Options)
					if len(d.Recipes) > 0 {
						t.recipe = d.Recipes[0]
					}
				}
			}
			if !found {
				if len(names) == 0 {
					return nil, fmt.Errorf("--overhead-backends: %q: backend %s describes no deployments; give it as %s", entry, name, name)
				}
				return nil, fmt.Errorf("--overhead-backends: %q: backend %s has no deployment %q (accepted: %s)", entry, name, deployment, strings.Join(names, ", "))
			}
		}
		out = append(out, t)
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
