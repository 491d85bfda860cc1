package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// CompareSpec is `check compare`'s selection of the matrix, as the flags
// give it. Empty fields take the preset's values, else the defaults.
type CompareSpec struct {
	// Preset is "", "quick", "full" or "jepsen-etcd".
	Preset string
	// Backends are backend names, or backend:recipe for one recipe. A bare
	// name means the backend's default recipe under the quick preset and
	// every recipe otherwise. Default: every registered backend but memory.
	Backends []string
	// Storages: default fenced (full: fenced, etcd, postgres). A backend
	// gets the shared storages and those of its own that are listed.
	Storages []string
	Faults   []string // default pause-holder
	Fencing  []string // default none,all (full: none,writes,all)
	// Runs per cell (default 1; full: 3); TimeLimit per run (default 20s;
	// quick: 15s).
	Runs      int
	TimeLimit time.Duration
	Seed      int64
	// Base holds the rest of every run's Config (clients, lease, ...);
	// zero fields take DefaultCompareBase's.
	Base Config
	// FullTime runs every cell for its whole time limit; otherwise a run
	// ends its workload at its first violation (StopOnViolation).
	FullTime bool
}

// ComparePresets are the accepted --preset values.
var ComparePresets = []string{"quick", "full", "jepsen-etcd"}

// jepsenEtcdBase is what the jepsen-etcd preset changes in every run: the
// setup of the lock test in Jepsen's analysis of etcd 3.4.3 (2 s leases, 5
// processes, 5 nodes, a 0–2 s critical section, a server paused for 5 s
// every 5 s), on Debian's etcd 3.4 (docs/jepsen-etcd.md).
func jepsenEtcdBase(base *Config) {
	base.Nodes, base.Clients, base.LeaseTTL = 5, 5, 2*time.Second
	base.Hold = 2 * time.Second
	base.PauseDuration, base.NemesisInterval = 5*time.Second, 5*time.Second
	base.ServerVersion = "3.4"
}

// DefaultCompareBase is what every run of a comparison shares: the root
// command's defaults.
func DefaultCompareBase() Config {
	return Config{Clients: 5, Keys: 1, LeaseTTL: 2 * time.Second, Work: 10 * time.Millisecond,
		NemesisInterval: 2 * time.Second, CheckTimeout: 5 * time.Minute, Nodes: 3}
}

// DefaultCompareBackends are the backends a comparison runs when none are
// named: every registered backend but the in-process memory one.
func DefaultCompareBackends() []string {
	var out []string
	for _, be := range Backends {
		if be.Name != "memory" {
			out = append(out, be.Name)
		}
	}
	return out
}

// CompareRow is one row of the matrix.
type CompareRow struct {
	Backend, Recipe, Storage, Fencing, Cluster string
}

func (r CompareRow) String() string {
	return fmt.Sprintf("%s %s %s %s", r.Backend, r.Recipe, r.Storage, r.Fencing)
}

// CompareMatrix is an expanded, validated comparison: every row runs
// under every fault Runs times.
type CompareMatrix struct {
	Preset    string
	Rows      []CompareRow
	Faults    []string
	Runs      int
	TimeLimit time.Duration
	Seed      int64
	Base      Config
}

// Applicable says why a row cannot run under a fault ("" when it can).
func (m *CompareMatrix) Applicable(r CompareRow, fault string) string {
	if r.Cluster == "inprocess" && fault != "none" && !slices.Contains(inProcessFaults, fault) {
		return fmt.Sprintf("an in-process run injects only %s", strings.Join(inProcessFaults, ", "))
	}
	// The rest of the question Validate asks (e.g. a partition of a
	// backend with one server has nothing to cut).
	cfg := m.Config(r, fault, 0, "compare")
	cfg.Defaults()
	if b, ok := backendInfo(r.Backend); ok {
		if err := cfg.checkFaults(b); err != nil {
			var ue *UsageError
			if errors.As(err, &ue) {
				return ue.Msg
			}
			return err.Error()
		}
	}
	return ""
}

// Config is the run of row r under fault f with the given run index.
func (m *CompareMatrix) Config(r CompareRow, fault string, run int, store string) Config {
	cfg := m.Base
	cfg.Backend, cfg.Recipe, cfg.Storage, cfg.Fencing, cfg.Cluster = r.Backend, r.Recipe, r.Storage, r.Fencing, r.Cluster
	cfg.Nemesis = []string{fault}
	cfg.TimeLimit = m.TimeLimit
	cfg.Seed = m.Seed + int64(run)
	cfg.Store = store
	cfg.Name = ""
	if b, ok := backendInfo(r.Backend); ok && len(b.Versions) == 0 {
		cfg.ServerVersion = "" // a server version means nothing to a backend with one build
	}
	return cfg
}

// ExpandCompare turns a spec into the matrix, checking every value up
// front; errors are *UsageError naming the flag.
func ExpandCompare(spec CompareSpec) (*CompareMatrix, error) {
	m := &CompareMatrix{Preset: spec.Preset, Seed: spec.Seed}
	base := DefaultCompareBase()
	fullTime := spec.FullTime
	if spec.Preset == "jepsen-etcd" {
		jepsenEtcdBase(&base)
		// The damage is measured over the whole run, as Jepsen's is.
		fullTime = true
	}
	b := spec.Base
	if b.Clients != 0 {
		base.Clients = b.Clients
	}
	if b.Keys != 0 {
		base.Keys = b.Keys
	}
	if b.LeaseTTL != 0 {
		base.LeaseTTL = b.LeaseTTL
	}
	if b.Work != 0 {
		base.Work = b.Work
	}
	if b.Hold != 0 {
		base.Hold = b.Hold
	}
	if b.PauseDuration != 0 {
		base.PauseDuration = b.PauseDuration
	}
	if b.ServerVersion != "" {
		base.ServerVersion = b.ServerVersion
	}
	if b.NemesisInterval != 0 {
		base.NemesisInterval = b.NemesisInterval
	}
	if b.CheckTimeout != 0 {
		base.CheckTimeout = b.CheckTimeout
	}
	if b.CheckMemory != 0 {
		base.CheckMemory = b.CheckMemory
	}
	base.StopOnViolation = !fullTime
	if b.Nodes != 0 {
		base.Nodes = b.Nodes
	}
	base.AgentBinary = b.AgentBinary
	m.Base = base

	// The preset's values, then the flags over them.
	var (
		everyRecipe = true
		storages    = []string{"fenced"}
		faults      = []string{"pause-holder"}
		fencing     = []string{"none", "all"}
		runs        = 1
		timeLimit   = 20 * time.Second
	)
	switch spec.Preset {
	case "":
	case "quick":
		everyRecipe = false
		timeLimit = 15 * time.Second
	case "full":
		storages = []string{"fenced"}
		for _, be := range Backends {
			storages = append(storages, be.Storages...)
		}
		if _, ok := Storages["postgres"]; ok {
			storages = append(storages, "postgres")
		}
		fencing = []string{"none", "writes", "all"}
		faults = []string{"pause-holder", "pause", "partition", "kill"}
		runs = 3
	case "jepsen-etcd":
		if len(spec.Backends) == 0 {
			spec.Backends = []string{"etcd:lock-rpc"}
		}
		storages = []string{"fenced", "etcd"}
		faults = []string{"pause-leader"}
		runs = 10
		timeLimit = 30 * time.Second
	default:
		return nil, usage("preset", "unknown preset %q (accepted: %s)", spec.Preset, strings.Join(ComparePresets, ", "))
	}
	backends := spec.Backends
	if len(backends) == 0 {
		backends = DefaultCompareBackends()
	}
	if len(spec.Storages) > 0 {
		storages = spec.Storages
	}
	if len(spec.Faults) > 0 {
		faults = spec.Faults
	}
	if len(spec.Fencing) > 0 {
		fencing = spec.Fencing
	}
	if spec.Runs != 0 {
		runs = spec.Runs
	}
	if spec.TimeLimit != 0 {
		timeLimit = spec.TimeLimit
	}

	if runs < 1 || runs > 100 {
		return nil, usage("runs", "%d is out of range (accepted: 1 to 100)", runs)
	}
	if timeLimit < time.Second || timeLimit > 24*time.Hour {
		return nil, usage("time-limit", "%s is out of range (accepted: 1s to 24h, e.g. 20s)", timeLimit)
	}
	m.Runs, m.TimeLimit = runs, timeLimit
	for _, f := range fencing {
		if _, err := fenced.ParseMode(f); err != nil {
			return nil, usage("fencing", "%v", err)
		}
	}
	if dup := firstDuplicate(fencing); dup != "" {
		return nil, usage("fencing", "%s is listed twice", dup)
	}
	for _, f := range faults {
		switch {
		case f == "clock":
			return nil, usage("faults", "clock faults cannot be injected per container: every container shares the host's clock")
		case !slices.Contains(Faults, f):
			return nil, usage("faults", "unknown fault %q (accepted: %s)", f, strings.Join(Faults, ", "))
		}
	}
	if dup := firstDuplicate(faults); dup != "" {
		return nil, usage("faults", "%s is listed twice", dup)
	}
	m.Faults = faults
	own := map[string]bool{}
	for _, be := range Backends {
		for _, s := range be.Storages {
			own[s] = true
		}
	}
	for _, s := range storages {
		if _, shared := Storages[s]; !shared && !own[s] {
			var accepted []string
			accepted = append(accepted, sharedStorages()...)
			for s := range own {
				accepted = append(accepted, s)
			}
			sort.Strings(accepted)
			return nil, usage("storages", "unknown storage %q (accepted: %s)", s, strings.Join(accepted, ", "))
		}
	}
	if dup := firstDuplicate(storages); dup != "" {
		return nil, usage("storages", "%s is listed twice", dup)
	}

	seen := map[CompareRow]bool{}
	for _, sel := range backends {
		name, recipe, one := strings.Cut(sel, ":")
		be, ok := backendInfo(name)
		if !ok {
			return nil, usage("backends", "unknown backend %q (accepted: %s; backend:recipe picks one recipe)", name, strings.Join(names(), ", "))
		}
		recipes := be.Recipes
		switch {
		case one && !slices.Contains(be.Recipes, recipe):
			return nil, usage("backends", "backend %s has no recipe %q (accepted: %s)", name, recipe, strings.Join(be.Recipes, ", "))
		case one:
			recipes = []string{recipe}
		case !everyRecipe:
			recipes = be.Recipes[:1]
		}
		cluster := "docker"
		if name == "memory" {
			cluster = "inprocess"
		}
		for _, rc := range recipes {
			for _, st := range storages {
				_, shared := Storages[st]
				switch {
				case shared && cluster == "inprocess" && st != "fenced":
					continue // an in-process run has only the fenced node
				case !shared && !slices.Contains(be.Storages, st):
					continue // another backend's own storage
				}
				fs := fencing
				if !shared {
					fs = []string{"none"} // the backend guards it itself
				}
				for _, f := range fs {
					r := CompareRow{Backend: name, Recipe: rc, Storage: st, Fencing: f, Cluster: cluster}
					if !seen[r] {
						seen[r] = true
						m.Rows = append(m.Rows, r)
					}
				}
			}
		}
	}
	if len(m.Rows) == 0 {
		return nil, usage("storages", "no backend of --backends %s can use storage %s", strings.Join(backends, ","), strings.Join(storages, ","))
	}
	cells := 0
	for _, r := range m.Rows {
		for _, f := range m.Faults {
			if m.Applicable(r, f) != "" {
				continue
			}
			cells++
			cfg := m.Config(r, f, 0, "compare")
			cfg.Defaults()
			if err := cfg.Validate(); err != nil {
				var ue *UsageError
				if errors.As(err, &ue) {
					return nil, usage(ue.Flag, "%s under %s: %s", r, f, ue.Msg)
				}
				return nil, err
			}
		}
	}
	if cells == 0 {
		return nil, usage("faults", "no cell can run: an in-process run (memory) injects only %s", strings.Join(inProcessFaults, ", "))
	}
	return m, nil
}

func firstDuplicate(list []string) string {
	seen := map[string]bool{}
	for _, s := range list {
		if seen[s] {
			return s
		}
		seen[s] = true
	}
	return ""
}

// AggregateCell summarizes a cell's runs: verdict counts, the median time
// to the first violation, acquisitions per second and the share of
// acquisitions that succeeded.
func AggregateCell(fault string, runs []reports.CompareRun) reports.CompareCell {
	c := reports.CompareCell{Fault: fault, Verdicts: map[string]int{}, Runs: runs}
	var firsts []float64
	var ok, all, rated int
	var rate float64
	for _, r := range runs {
		c.Verdicts[r.Verdict]++
		if r.FirstViolationS != nil {
			firsts = append(firsts, *r.FirstViolationS)
		}
		n := r.AcquireOK + r.AcquireFail + r.AcquireInfo
		ok += r.AcquireOK
		all += n
		if n > 0 && r.TimeLimitS > 0 {
			rate += float64(r.AcquireOK) / r.TimeLimitS
			rated++
		}
	}
	if len(firsts) > 0 {
		med := median(firsts)
		c.MedianFirstViolationS = &med
	}
	if rated > 0 {
		c.AcquiresPerS = rate / float64(rated)
	}
	if all > 0 {
		share := float64(ok) / float64(all)
		c.AcquireOKShare = &share
	}
	var lost []float64
	for _, r := range runs {
		if r.LostShareMin == nil || r.LostShareMax == nil {
			continue
		}
		lost = append(lost, *r.LostShareMin)
		if len(c.LostShareRange) == 0 {
			c.LostShareRange = []float64{*r.LostShareMin, *r.LostShareMax}
		}
		c.LostShareRange[0] = min(c.LostShareRange[0], *r.LostShareMin)
		c.LostShareRange[1] = max(c.LostShareRange[1], *r.LostShareMax)
	}
	if len(lost) > 0 {
		med := median(lost)
		c.MedianLostShare = &med
	}
	return c
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// FirstViolation is when the earliest culprit op of an invalid result
// completed, in the history's time (since the start of the workload).
func FirstViolation(res models.Result, ops []history.Op) (time.Duration, bool) {
	byIndex := map[int64]history.Op{}
	for _, o := range ops {
		byIndex[o.InvokeIndex] = o
	}
	best := time.Duration(-1)
	for _, k := range res.Keys {
		if len(k.Culprits) == 0 {
			continue
		}
		o, ok := byIndex[k.Culprits[0]]
		if !ok {
			continue
		}
		if t := time.Duration(o.Done); best < 0 || t < best {
			best = t
		}
	}
	return best, best >= 0
}

// compareRun sums up one finished run from its outcome and its store
// directory (results.json for the counts, history.jsonl for the first
// violation).
func compareRun(cfg Config, root string, out *Outcome, runErr error, took time.Duration) reports.CompareRun {
	r := reports.CompareRun{Seed: cfg.Seed, TimeLimitS: cfg.TimeLimit.Seconds(), DurationS: took.Seconds(), Verdict: "error"}
	if out != nil {
		if rel, err := filepath.Rel(root, out.Dir); err == nil && out.Dir != "" {
			r.Dir = filepath.ToSlash(rel)
		}
		if runErr == nil {
			r.Verdict = string(out.Result.Verdict)
		}
	}
	if runErr != nil {
		r.Error = runErr.Error()
	}
	if out == nil || out.Dir == "" {
		return r
	}
	if b, err := os.ReadFile(filepath.Join(out.Dir, "results.json")); err == nil {
		var res reports.Results
		if json.Unmarshal(b, &res) == nil {
			acq := res.Stats.Ops[history.Acquire]
			r.AcquireOK, r.AcquireFail, r.AcquireInfo = acq[string(history.OK)], acq[string(history.Fail)], acq[string(history.Info)]
			r.LostShareMin, r.LostShareMax = res.Damage.LostShareMin, res.Damage.LostShareMax
		}
	}
	if out.Result.Verdict == models.Invalid {
		if events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl")); err == nil {
			ops, _ := history.Pair(events)
			if t, ok := FirstViolation(out.Result, ops); ok {
				s := t.Seconds()
				r.FirstViolationS = &s
			}
			if cfg.StopOnViolation && len(events) > 0 {
				// The workload ended at the violation: rates are per
				// second of what was run, not of the time limit.
				r.TimeLimitS = min(r.TimeLimitS, time.Duration(events[len(events)-1].Time).Seconds())
			}
		}
	}
	return r
}

// RunCompare runs every applicable cell of m, one run at a time, with
// each run's directory under dir, and writes compare.json, compare.md and
// compare.html into dir (after every cell, so a long comparison can be
// watched). progress gets a line per run. The first interrupt stops the
// run going on (it is still checked) and skips the rest. The error is
// about writing the tables; failed runs are in the comparison (Errors).
func RunCompare(sig Signals, m *CompareMatrix, dir string, progress io.Writer) (*reports.Comparison, error) {
	if progress == nil {
		progress = io.Discard
	}
	started := time.Now()
	c := &reports.Comparison{
		Started: started.UTC().Format("2006-01-02T15:04:05Z"), Preset: m.Preset, Seed: m.Seed, Runs: m.Runs,
		TimeLimitS: m.TimeLimit.Seconds(), Faults: m.Faults,
		Clients: m.Base.Clients, Keys: m.Base.Keys, Nodes: m.Base.Nodes, LeaseTTLS: m.Base.LeaseTTL.Seconds(),
	}
	total := 0
	for i, r := range m.Rows {
		c.Rows = append(c.Rows, reports.CompareRow{Backend: r.Backend, Recipe: r.Recipe, Storage: r.Storage, Fencing: r.Fencing, Cluster: r.Cluster})
		for _, f := range m.Faults {
			cell := reports.CompareCell{Fault: f, Verdicts: map[string]int{}}
			if why := m.Applicable(r, f); why != "" {
				cell.NotApplicable = why
			} else {
				total += m.Runs
			}
			c.Rows[i].Cells = append(c.Rows[i].Cells, cell)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return c, fmt.Errorf("creating %s: %w (choose another with --store)", dir, err)
	}
	fmt.Fprintf(progress, "compare: %d rows × %d faults, %d runs of %s, seed %d, store %s\n",
		len(m.Rows), len(m.Faults), total, m.TimeLimit, m.Seed, dir)
	done := 0
	for i, r := range m.Rows {
		for j, f := range m.Faults {
			if c.Rows[i].Cells[j].NotApplicable != "" {
				continue
			}
			var runs []reports.CompareRun
			for k := 0; k < m.Runs && sig.Stop.Err() == nil; k++ {
				cfg := m.Config(r, f, k, dir)
				done++
				fmt.Fprintf(progress, "[%d/%d] %s × %s, run %d/%d (seed %d); %d left after this\n",
					done, total, r, f, k+1, m.Runs, cfg.Seed, total-done)
				t0 := time.Now()
				out, err := Run(sig, cfg, nil)
				run := compareRun(cfg, dir, out, err, time.Since(t0))
				if err == nil && out.Interrupted {
					c.Interrupted = true
				}
				runs = append(runs, run)
				fmt.Fprintf(progress, "        %s\n", runLine(run))
			}
			if len(runs) > 0 {
				c.Rows[i].Cells[j] = AggregateCell(f, runs)
			}
			c.Errors = countErrors(c)
			c.DurationS = time.Since(started).Seconds()
			if sig.Stop.Err() != nil {
				c.Interrupted = true
			}
			if err := reports.WriteComparison(dir, c); err != nil {
				return c, fmt.Errorf("writing the comparison: %w", err)
			}
		}
	}
	c.Errors = countErrors(c)
	c.DurationS = time.Since(started).Seconds()
	if err := reports.WriteComparison(dir, c); err != nil {
		return c, fmt.Errorf("writing the comparison: %w", err)
	}
	fmt.Fprintf(progress, "compare: done in %s: %s\n", time.Since(started).Round(time.Second), filepath.Join(dir, "compare.html"))
	return c, nil
}

func runLine(r reports.CompareRun) string {
	s := r.Verdict
	if r.FirstViolationS != nil {
		s += fmt.Sprintf(", first violation at %.1f s", *r.FirstViolationS)
	}
	if r.LostShareMin != nil && r.LostShareMax != nil {
		s += ", lost " + models.ShareText(*r.LostShareMin, *r.LostShareMax) + " of acknowledged updates"
	}
	s += fmt.Sprintf(", %d ok acquires, %.0f s", r.AcquireOK, r.DurationS)
	if r.Error != "" {
		s += ": " + strings.Join(strings.Fields(r.Error), " ")
	}
	if r.Dir != "" {
		s += " → " + r.Dir
	}
	return s
}

func countErrors(c *reports.Comparison) int {
	n := 0
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			n += cell.Verdicts["error"]
		}
	}
	return n
}

// CompareExitCode is `check compare`'s exit code: 0 when every cell ran
// (whatever the verdicts), 255 when a run could not be carried out or an
// interrupt kept cells from running.
func CompareExitCode(c *reports.Comparison) int {
	if c == nil || c.Errors > 0 || c.Interrupted {
		return ExitFailed
	}
	return ExitValid
}
