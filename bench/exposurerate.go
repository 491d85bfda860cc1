package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/models"
)

// The exposure-rate group (issue 50: a VALID worth more per minute) runs,
// per backend and side by side in one process, fenced, today's
// pause-holder schedule and check --preset ci-bound's (harness.CIBound),
// each for the same time, and prints each run's exposures a minute of
// workload, what became of them, its verdict and the bound they reach.
// On etcd it also runs both schedules unfenced, a few seeds each, and
// prints the median time to the first violation.

// exposureRateOptions are the group's options from the command line.
type exposureRateOptions struct {
	backends []string
	// timeLimit is every fenced run's workload length.
	timeLimit time.Duration
	// unfencedTime is each unfenced etcd run's (0: no unfenced part).
	unfencedTime time.Duration
	// seeds is how many unfenced runs each schedule gets (seeds 1..n).
	seeds int
	// store is where every run of the group is kept.
	store string
}

// rateRecipes are the recipes the group names: Redis's default, setnx,
// gives no token to fence with (setnx-incr INCRs one), and PostgreSQL has
// a recipe without one (advisory-notoken), so its rows say they run lease
// (its default, with a token). The other backends' defaults have tokens.
var rateRecipes = map[string]string{"redis": "setnx-incr", "postgres": "lease"}

// unfencedBackend is the one backend the unfenced part runs on.
const unfencedBackend = "etcd"

// exposureRateFlags reads the group's flags; an error names the flag.
func exposureRateFlags(f flags) (exposureRateOptions, error) {
	o := exposureRateOptions{timeLimit: f.rateTime, unfencedTime: f.rateUnfencedTime, seeds: f.rateSeeds, store: f.rateStore}
	for _, name := range strings.Split(f.rateBackends, ",") {
		name = strings.TrimSpace(name)
		b, ok := registry.Lookup(name)
		if !ok || !slices.Contains(b.Clusters, registry.ClusterDocker) {
			return o, fmt.Errorf("--exposure-rate-backends: %q is not a backend that runs in Docker (e.g. etcd,zookeeper,postgres,redis,kubernetes)", name)
		}
		if slices.Contains(o.backends, name) {
			return o, fmt.Errorf("--exposure-rate-backends: %s is named twice", name)
		}
		o.backends = append(o.backends, name)
	}
	if o.timeLimit < time.Second || o.timeLimit > 24*time.Hour {
		return o, fmt.Errorf("--exposure-rate-time: %s is out of range (accepted: 1s to 24h, e.g. 40s or 3m)", o.timeLimit)
	}
	if o.unfencedTime != 0 && (o.unfencedTime < time.Second || o.unfencedTime > 24*time.Hour) {
		return o, fmt.Errorf("--exposure-rate-unfenced-time: %s is out of range (accepted: 0 for no unfenced runs, or 1s to 24h, e.g. 20s)", o.unfencedTime)
	}
	if o.seeds < 1 {
		return o, fmt.Errorf("--exposure-rate-seeds: %d is not a number of runs (at least 1)", o.seeds)
	}
	return o, nil
}

// rateSchedule is one side of the comparison.
type rateSchedule struct {
	name string
	// ciBound: check --preset ci-bound's schedule; else today's.
	ciBound bool
}

var rateSchedules = []rateSchedule{
	{name: "today (pause-holder, 1 key, 5 clients)"},
	{name: fmt.Sprintf("ci-bound (%d keys, %d clients, %d at once, pause-until %s, nemesis-interval %s)", harness.CIBound.Keys,
		harness.CIBound.ClientsPerKey*harness.CIBound.Keys, harness.CIBound.Keys, harness.CIBound.PauseUntil, harness.CIBound.NemesisInterval), ciBound: true},
}

// short is the schedule's name in the unfenced rows and the progress.
func (s rateSchedule) short() string { return strings.SplitN(s.name, " ", 2)[0] }

// rateConfig is one run of the group: the main command's defaults
// (check --backend B --nemesis pause-holder), fenced or not, with the
// schedule's settings and the time limit given. The preset's own time
// limit gives way to it, so both sides run alike.
func rateConfig(backend string, s rateSchedule, fencing string, timeLimit time.Duration, seed int64, store string) harness.Config {
	cfg := harness.Config{Backend: backend, Recipe: rateRecipes[backend], Cluster: registry.ClusterDocker, Nodes: 3,
		Nemesis: []string{"pause-holder"}, Clients: 5, Keys: 1, LeaseTTL: 2 * time.Second, Work: 10 * time.Millisecond,
		NemesisInterval: 2 * time.Second, CheckTimeout: 5 * time.Minute, Seed: seed, Store: store}
	if s.ciBound {
		harness.CIBound.Apply(&cfg, harness.CIBound.Keys)
	}
	cfg.Fencing, cfg.TimeLimit = fencing, timeLimit
	return cfg
}

// rateRun is what a row says of one run.
type rateRun struct {
	verdict    models.Verdict
	counts     models.ExposureCounts
	workload   time.Duration
	freezes    []time.Duration // pause-holder's intervals that ended
	first      time.Duration   // the first violation, when found
	found      bool
	dir        string
	incomplete string
}

// summarizeRun reads a run's row from its result in memory.
func summarizeRun(out *harness.RunResult) rateRun {
	r := rateRun{verdict: out.Result.Verdict, workload: out.Workload, dir: out.Dir, incomplete: out.Incomplete}
	if x := out.Result.Exposures; x != nil {
		r.counts = x.ExposureCounts
	}
	if out.Report != nil {
		for _, f := range out.Report.Faults {
			if f.F == "pause-holder" && f.Error == "" && f.End != math.MaxInt64 && f.End > f.Start {
				r.freezes = append(r.freezes, time.Duration(f.End-f.Start))
			}
		}
	}
	if out.Result.Verdict == models.Invalid {
		r.first, r.found = firstViolation(out)
	}
	return r
}

// perMinute is the run's exposures a minute of workload (-1 when it had
// no workload).
func (r rateRun) perMinute() float64 {
	if r.workload <= 0 {
		return -1
	}
	return float64(r.counts.Exposures) / r.workload.Minutes()
}

// rateGoal is what a fenced row must show: the known answer (valid, none
// admitted), and for the preset on etcd issue 50's goals: at least
// minRate a minute and, from a run as long as the preset's, a bound of at
// most maxBound per exposure.
type rateGoal struct {
	minRate  float64 // 0: none
	maxBound float64 // 0: none
}

func (g rateGoal) String() string {
	s := "valid, 0 admitted"
	if g.minRate > 0 {
		s += fmt.Sprintf(", >= %.0f/min", g.minRate)
	}
	if g.maxBound > 0 {
		s += fmt.Sprintf(", bound <= %s", strings.TrimSuffix(fmt.Sprintf("%.1f", 100*g.maxBound), ".0")+" %")
	}
	return s
}

// fencedGoal is the goal of a fenced run of s on backend for timeLimit.
func fencedGoal(backend string, s rateSchedule, timeLimit time.Duration) rateGoal {
	var g rateGoal
	if s.ciBound && backend == "etcd" {
		g.minRate = 100
		if timeLimit >= harness.CIBound.TimeLimit {
			g.maxBound = 0.01
		}
	}
	return g
}

// backendLabel names a backend with the recipe the group gives it.
func backendLabel(backend string) string {
	if r := rateRecipes[backend]; r != "" {
		return backend + " " + r
	}
	return backend
}

// fencedRow is a fenced run's row: its exposures a minute, and in the
// note the verdict, the counts, the bound, the median freeze and where
// the run is kept.
func fencedRow(backend string, s rateSchedule, timeLimit time.Duration, r rateRun, g rateGoal) row {
	name := fmt.Sprintf("exposure rate, %s, fenced, %s, %s", backendLabel(backend), s.name, timeLimit)
	c := r.counts
	note := fmt.Sprintf("%s; %d exposures in %s of workload: %d admitted, %d refused", r.verdict, c.Exposures, workloadText(r.workload), c.Admitted, c.Refused)
	if c.NotSent+c.Unknown > 0 {
		note += fmt.Sprintf(", %d not sent, %d unknown", c.NotSent, c.Unknown)
	}
	if b := c.BoundText(); b != "" {
		note += "; " + b
	}
	if len(r.freezes) > 0 {
		note += fmt.Sprintf("; median freeze %.1f s of %d", medianDuration(r.freezes).Seconds(), len(r.freezes))
	}
	if r.incomplete != "" {
		note += "; incomplete: " + r.incomplete
	}
	note += "; " + r.dir
	rate := r.perMinute()
	pass := r.verdict == models.Valid && c.Admitted == 0 && rate >= g.minRate
	if g.maxBound > 0 {
		_, _, hi, ok := c.Bound()
		pass = pass && ok && hi <= g.maxBound
	}
	return row{name: name, value: rate, unit: "/min", goal: g.String(), pass: pass, note: note}
}

// unfencedRow is one schedule's unfenced runs on etcd: the median time to
// the first violation over the runs that found one. Every run must be
// invalid (the known answer), and the preset's median no later than
// today's (issue 50), when today's is given.
func unfencedRow(s rateSchedule, timeLimit time.Duration, runs []rateRun, today *time.Duration, store string) row {
	name := fmt.Sprintf("exposure rate, %s, unfenced, %s, %d seeds of %s: median time to the first violation", unfencedBackend, s.short(), len(runs), timeLimit)
	var firsts []time.Duration
	var counts models.ExposureCounts
	var workload time.Duration
	invalid := 0
	for _, r := range runs {
		if r.verdict == models.Invalid {
			invalid++
		}
		if r.found {
			firsts = append(firsts, r.first)
		}
		counts.Add(r.counts)
		workload += r.workload
	}
	goal := "invalid, every seed"
	if today != nil {
		goal = "<= today's, invalid every seed"
	}
	value, pass := -1.0, false
	if med, ok := medianFirst(runs); ok {
		value, pass = med.Seconds(), invalid == len(runs)
		if today != nil {
			pass = pass && med <= *today
		}
	}
	parts := make([]string, len(firsts))
	sorted := slices.Clone(firsts)
	slices.Sort(sorted)
	for i, d := range sorted {
		parts[i] = fmt.Sprintf("%.1f", d.Seconds())
	}
	note := fmt.Sprintf("%d of %d invalid; first violations %s s", invalid, len(runs), strings.Join(parts, ", "))
	if len(parts) == 0 {
		note = fmt.Sprintf("%d of %d invalid; no first violation found", invalid, len(runs))
	}
	if workload > 0 {
		note += fmt.Sprintf("; %.0f exposures a minute of workload, %d of %d admitted", float64(counts.Exposures)/workload.Minutes(), counts.Admitted, counts.Exposures)
	}
	if today != nil {
		note += fmt.Sprintf("; today's median %.1f s", today.Seconds())
	}
	note += "; runs in " + store
	return row{name: name, value: value, unit: "s", goal: goal, pass: pass, note: note}
}

// medianFirst is the median time to the first violation over the runs
// that found one.
func medianFirst(runs []rateRun) (time.Duration, bool) {
	var firsts []time.Duration
	for _, r := range runs {
		if r.found {
			firsts = append(firsts, r.first)
		}
	}
	if len(firsts) == 0 {
		return 0, false
	}
	return medianDuration(firsts), true
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// workloadText is a workload's length as check --preset ci-bound's line
// says it: "3.0 min", "40.1 s".
func workloadText(d time.Duration) string {
	if d >= time.Minute {
		return fmt.Sprintf("%.1f min", d.Minutes())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// exposureRateRows runs the group: per backend both schedules fenced, one
// run each on a new cluster, one after the other; on etcd then both
// schedules unfenced, o.seeds runs each, the runs of one schedule on one
// warm cluster (one cluster up at a time).
func exposureRateRows(o exposureRateOptions) []row {
	store := o.store
	if store == "" {
		store = tempStore()
	}
	fmt.Fprintf(os.Stderr, "bench: exposure rate: runs kept in %s\n", store)
	var rows []row
	for _, backend := range o.backends {
		for _, s := range rateSchedules {
			cfg := rateConfig(backend, s, "all", o.timeLimit, 1, store)
			out, err := harness.Run(quiet(), cfg, nil)
			if err != nil {
				rows = append(rows, failedRow(fmt.Sprintf("exposure rate, %s, fenced, %s", backendLabel(backend), s.name), err))
				continue
			}
			r := summarizeRun(out)
			rows = append(rows, fencedRow(backend, s, o.timeLimit, r, fencedGoal(backend, s, o.timeLimit)))
			fmt.Fprintf(os.Stderr, "bench: exposure rate, %s fenced, %s: %.0f a minute, %s (%s)\n", backendLabel(backend), s.short(), r.perMinute(), r.verdict, r.dir)
		}
		if backend == unfencedBackend && o.unfencedTime > 0 {
			rows = append(rows, unfencedRows(o, store)...)
		}
	}
	return rows
}

// unfencedRows runs both schedules unfenced on etcd, o.seeds runs each
// with --stop-on-violation off, so each run's first violation is where it
// fell in a whole workload.
func unfencedRows(o exposureRateOptions, store string) []row {
	var rows []row
	var today *time.Duration
	for _, s := range rateSchedules {
		var runs []rateRun
		p := harness.NewClustersUpTo(1)
		var runErr error
		for seed := int64(1); seed <= int64(o.seeds); seed++ {
			cfg := rateConfig(unfencedBackend, s, "none", o.unfencedTime, seed, store)
			out, err := p.Run(quiet(), cfg, nil)
			if err != nil {
				runErr = err
				break
			}
			r := summarizeRun(out)
			runs = append(runs, r)
			fmt.Fprintf(os.Stderr, "bench: exposure rate, %s unfenced, %s, seed %d: %s, first violation %.1f s (%s)\n", unfencedBackend, s.short(), seed, r.verdict, r.first.Seconds(), r.dir)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		if err := p.Close(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
		cancel()
		if runErr != nil {
			rows = append(rows, failedRow(fmt.Sprintf("exposure rate, %s, unfenced, %s", unfencedBackend, s.short()), runErr))
			continue
		}
		rows = append(rows, unfencedRow(s, o.unfencedTime, runs, today, store))
		if d, ok := medianFirst(runs); ok && !s.ciBound {
			today = &d
		}
	}
	return rows
}
