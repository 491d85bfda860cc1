// Package compare runs a matrix of tests — backends and recipes ×
// storages and fencing modes (rows) × faults (columns), several runs a
// cell — and summarizes each cell from the runs' in-memory results. Each
// cell is resolved once (harness.ResolveCell, in Expand: its defaults,
// its checks, its --client program) and each of its runs is that
// harness.Test with its own seed and store (Test.Rerun), run on warm
// clusters (harness.Clusters.RunTest). A cell's summary has the verdict
// counts, the median time to the first violation, acquisitions per
// second, the share of acquisitions that succeeded and the share of
// acknowledged updates lost. The result's types
// (Comparison, its rows, cells and runs) are compare/result's, which also
// draws the tables; runstore names their files and says where they go.
//
// A matrix can be split over machines (Shard, RunShard: a deterministic
// cut of its (cell, run) pairs) and put together again (Merge) from the
// shards' compare.json alone.
//
// It reports, it never judges: a cell's verdicts are the runs' own, as
// the checker gave them; compare never checks a history itself, never
// reads back from disk what a run just wrote (a merge reads only the
// summaries the shards wrote), and never names a backend — what a
// backend can do it asks of backends/registry.
package compare

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/clientdir"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/nemesis"
)

// Spec is `check compare`'s selection of the matrix, as the flags
// give it. Empty fields take the preset's values, else the defaults.
type Spec struct {
	// Preset is "" or one of Presets: "quick", "full", "jepsen-etcd",
	// "kleppmann", "power" or "redis-deployments".
	Preset string
	// Backends are backend names, or backend:recipe for one recipe. A bare
	// name means the backend's default recipe under the quick preset and
	// every recipe otherwise. Default: every registered backend but memory.
	Backends []string
	// Storages: default fenced (full: fenced, etcd, postgres). A backend
	// gets the shared storages and those of its own that are listed.
	Storages []string
	// Faults are the columns (default pause-holder); a+b is one column
	// whose schedule draws a or b for each injection.
	Faults []string
	// LeaseChecks are what the built-in client checks of its lease, one
	// row each (default all: the careful client; none: it trusts its
	// grant).
	LeaseChecks []string
	Fencing     []string // default none,all (full: none,writes,all)
	// Runs per cell (default 1; full: 3); TimeLimit per run (default 20s;
	// quick: 15s).
	Runs      int
	TimeLimit time.Duration
	Seed      int64
	// Base holds the rest of every run's Config (clients, lease, ...);
	// zero fields take DefaultBase's.
	Base harness.Config
	// Clients are user clients (--client, docs/client-protocol.md), each
	// BACKEND:DIR, or DIR to run against every backend of Backends (and
	// then Backends names no built-in rows). Each is a row group named
	// after the client; with clients and no Backends, no built-in rows.
	Clients []string
	// ReadMix is the share of each run's ops that read without the lock
	// (--read-mix); nil takes the preset's (jepsen-etcd: 0.5), else 0.
	ReadMix *float64
	// FullTime runs every cell for its whole time limit; otherwise a run
	// ends its workload at its first violation (StopOnViolation).
	FullTime bool
	// Parallel is how many runs go on at once, each on its own cluster
	// (--parallel; 0: one).
	Parallel int
	// ServerVersions are server builds (--server-version values), one row
	// each for every backend that has several builds; a backend with one
	// build gets its one row. Default: the preset's, else each backend's
	// first.
	ServerVersions []string
}

// DefaultBase is what every run of a comparison shares: the root
// command's defaults.
func DefaultBase() harness.Config {
	return harness.Config{Clients: 5, Keys: 1, LeaseTTL: 2 * time.Second, Work: 10 * time.Millisecond,
		NemesisInterval: 2 * time.Second, CheckTimeout: 5 * time.Minute, Nodes: 3}
}

// DefaultBackends are the backends a comparison runs when none are
// named: every registered backend but the in-process memory one.
func DefaultBackends() []string {
	var out []string
	for _, be := range registry.All() {
		if defaultCluster(be) != registry.ClusterInProcess {
			out = append(out, be.Name)
		}
	}
	return out
}

// Row is one row of the matrix. A user client's row has its directory in
// Client and its name, marked as a client's, in Recipe.
type Row struct {
	Backend, Recipe, Storage, Fencing string
	Cluster                           registry.Cluster
	Client                            string
	// LeaseCheck is the built-in client's --lease-check ("" or all: the
	// careful client).
	LeaseCheck string
	// ServerVersion is the row's --server-version ("" for the matrix's
	// own, Base.ServerVersion).
	ServerVersion string
	// Settings name the choice of the backend's own flags the row runs
	// with ("" for none: the matrix's), as the backend describes it
	// (registry.Settings: "safe", "sentinel"), and Options are those
	// flags, "flag=value" pairs sorted by flag and joined by spaces (a
	// string, so that a Row stays comparable).
	Settings, Options string
	// Faults, when set, are the only columns the row runs (a comma list),
	// and FaultsWhy says so and why, as the n/a cells' reason: the faults
	// that have meaning for its settings, as the backend says.
	Faults, FaultsWhy string
	// Nodes, Clients, NemesisInterval and TimeLimit, when set, are the
	// row's own (a known bug's: one member, two clients, a service that
	// needs 10 s after a power cut) over the matrix's.
	Nodes, Clients  int
	NemesisInterval time.Duration
	TimeLimit       time.Duration
}

func (r Row) String() string {
	s := fmt.Sprintf("%s %s %s %s", r.BackendLabel(), r.RecipeLabel(), r.Storage, r.Fencing)
	if r.Settings != "" {
		s += " [" + r.SettingsLabel() + "]"
	}
	return s
}

// SettingsLabel is the row's settings as the tables show them: the name
// and the flags ("safe: --redis-persistence aof-always"); "" for none.
func (r Row) SettingsLabel() string {
	if r.Settings == "" {
		return ""
	}
	if flags := r.settings().Flags(); flags != "" {
		return r.Settings + ": " + flags
	}
	return r.Settings
}

// settings is the row's settings as the registry has them.
func (r Row) settings() registry.Settings {
	s := registry.Settings{Name: r.Settings}
	for _, pair := range strings.Fields(r.Options) {
		if s.Options == nil {
			s.Options = map[string]string{}
		}
		f, v, _ := strings.Cut(pair, "=")
		s.Options[f] = v
	}
	return s
}

// withSettings is r with the settings s.
func (r Row) withSettings(s registry.Settings) Row {
	var pairs []string
	for _, f := range slices.Sorted(maps.Keys(s.Options)) {
		pairs = append(pairs, f+"="+s.Options[f])
	}
	r.Settings, r.Options = s.Name, strings.Join(pairs, " ")
	return r
}

// BackendLabel is the backend as the tables show it: with the server
// build the row asked for, when it names one.
func (r Row) BackendLabel() string {
	if r.ServerVersion != "" {
		return r.Backend + " " + r.ServerVersion
	}
	return r.Backend
}

// RecipeLabel is the recipe as the tables show it: a client that trusts
// its grant is marked.
func (r Row) RecipeLabel() string {
	if r.LeaseCheck == registry.LeaseCheckNone {
		return r.Recipe + " (trusting: lease-check none)"
	}
	return r.Recipe
}

// FaultList is a column's --nemesis list: a+b is a and b, one of them
// drawn for each injection.
func FaultList(column string) []string { return strings.Split(column, "+") }

// FaultNames is every fault the matrix's columns inject, each once, in
// column order.
func (m *Matrix) FaultNames() []string {
	var out []string
	for _, col := range m.Faults {
		for _, f := range FaultList(col) {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

// Matrix is an expanded, validated comparison: every row runs
// under every fault Runs times.
type Matrix struct {
	Preset string
	// Published is the published figure the preset reproduces ("" if
	// none): the comparison's page shows it beside the measured one.
	Published string
	Rows      []Row
	Faults    []string
	Runs      int
	TimeLimit time.Duration
	Seed      int64
	Base      harness.Config
	// Parallel is how many runs go on at once (0: one); a slot runs one
	// run at a time on its own cluster, warm clusters shared between
	// slots' runs one after another (harness.Clusters).
	Parallel int
	// bindWhereAble: the preset binds each client to one server, and a
	// backend that cannot be bound (Info.OneEndpoint false) runs with
	// every endpoint instead of being refused.
	bindWhereAble bool
	// clients are the --client directories the rows name, as Expand
	// read them (for the rows' labels): a cell's Test takes its program
	// from here instead of reading the directory again.
	clients map[string]*clientdir.Client
	// cells are the cells resolved so far (cells.go).
	cells cellCache
	// timeLimitGiven: --time-limit was given, and holds over a row's
	// own (a known bug's).
	timeLimitGiven bool
}

// NeedsDocker says whether any row runs on a Docker cluster (the engine
// then bounds how many runs can go on at once).
func (m *Matrix) NeedsDocker() bool {
	return slices.ContainsFunc(m.Rows, func(r Row) bool { return r.Cluster != registry.ClusterInProcess })
}

// Expand turns a spec into the matrix, checking every value up
// front; errors are *usage.Error naming the flag.
func Expand(spec Spec) (*Matrix, error) {
	m := &Matrix{Preset: spec.Preset, Seed: spec.Seed, Base: expandBase(spec), Published: published[spec.Preset], Parallel: spec.Parallel}
	m.bindWhereAble = spec.Base.ClientEndpoints == "" && m.Base.ClientEndpoints == harness.ClientEndpointsOne
	l, err := presetLists(spec)
	if err != nil {
		return nil, err
	}
	if err := l.check(); err != nil {
		return nil, err
	}
	m.Runs, m.TimeLimit, m.Faults = l.runs, l.timeLimit, l.faults
	m.timeLimitGiven = spec.TimeLimit != 0
	seen := map[Row]bool{}
	add := func(r Row) {
		if !seen[r] && (l.keep == nil || l.keep(r)) {
			seen[r] = true
			m.Rows = append(m.Rows, r)
		}
	}
	clientRows, builtin, err := m.expandClients(spec, l.fencing)
	if err != nil {
		return nil, err
	}
	if len(clientRows) > 0 && m.Base.ReadMix > 0 {
		how := "--read-mix"
		if spec.ReadMix == nil {
			how = fmt.Sprintf("the %s preset's read mix (%v)", spec.Preset, m.Base.ReadMix)
		}
		return nil, usage.Errorf("read-mix", "%s mixes lock-free reads into every run, an op of fencecheck's own client that the client protocol does not ask of yours; run the --client rows with --read-mix 0", how)
	}
	for _, r := range clientRows {
		add(r)
	}
	if !builtin {
		l.backends = nil
	}
	if err := l.builtinRows(add); err != nil {
		return nil, err
	}
	if len(m.Rows) == 0 {
		return nil, usage.Errorf("storages", "no backend of --backends %s can use storage %s", strings.Join(l.backends, ","), strings.Join(l.storages, ","))
	}
	if len(l.serverVersions) > 0 && !slices.ContainsFunc(m.Rows, func(r Row) bool { return r.ServerVersion != "" }) {
		return nil, usage.Errorf("server-versions", "no backend of the matrix has several server builds to choose from (%s): drop the flag, or add a backend that has, e.g. --backends etcd", registry.VersionUsage())
	}
	if err := m.checkCells(); err != nil {
		return nil, err
	}
	return m, nil
}

// check refuses a count out of range, an unknown fencing mode, fault or
// storage, and a value listed twice.
func (l lists) check() error {
	if err := CheckRuns(l.runs); err != nil {
		return err
	}
	if err := CheckTimeLimit(l.timeLimit); err != nil {
		return err
	}
	for _, f := range l.fencing {
		if _, err := fenced.ParseMode(f); err != nil {
			return usage.Errorf("fencing", "%v", err)
		}
	}
	if dup := firstDuplicate(l.fencing); dup != "" {
		return usage.Errorf("fencing", "%s is listed twice", dup)
	}
	for _, lc := range l.leaseChecks {
		if !slices.Contains(registry.LeaseChecks, lc) {
			return usage.Errorf("lease-checks", "unknown lease check %q (accepted: %s)", lc, strings.Join(registry.LeaseChecks, ", "))
		}
	}
	if dup := firstDuplicate(l.leaseChecks); dup != "" {
		return usage.Errorf("lease-checks", "%s is listed twice", dup)
	}
	if dup := firstDuplicate(l.serverVersions); dup != "" {
		return usage.Errorf("server-versions", "%s is listed twice", dup)
	}
	for _, f := range l.faults {
		// Each column is one fault, or faults joined by +: the registry
		// knows the words.
		if err := nemesis.CheckNames(FaultList(f)); err != nil {
			return usage.Errorf("faults", "%v", err)
		}
	}
	if dup := firstDuplicate(l.faults); dup != "" {
		return usage.Errorf("faults", "%s is listed twice", dup)
	}
	own := map[string]bool{}
	for _, be := range registry.All() {
		for _, s := range be.Storages {
			own[s] = true
		}
	}
	for _, s := range l.storages {
		if !registry.IsSharedStorage(s) && !own[s] {
			var accepted []string
			accepted = append(accepted, registry.SharedStorages()...)
			for s := range own {
				accepted = append(accepted, s)
			}
			sort.Strings(accepted)
			return usage.Errorf("storages", "unknown storage %q (accepted: %s)", s, strings.Join(accepted, ", "))
		}
	}
	if dup := firstDuplicate(l.storages); dup != "" {
		return usage.Errorf("storages", "%s is listed twice", dup)
	}
	return nil
}

// variant is a backend's rows of one choice of its own flags: its
// recipes, the settings and the faults they run under (none: every
// column).
type variant struct {
	recipes  []string
	settings registry.Settings
	faults   []string
	// why is the reason for the faults, the backend's words, and what
	// names the variant in it ("redis's sentinel deployment runs").
	why, what string
}

// variants are the choices of be's own flags the matrix's rows take,
// with recipe the one recipe sel names (one): one variant with no
// settings, or (the power preset) each of the backend's durability
// settings, or (a deployments preset) each of its deployments.
func (l lists) variants(be registry.Info, recipe string, one bool) ([]variant, error) {
	switch l.rowsFrom {
	case fromDurability:
		d := be.Durability
		if d == nil {
			return nil, usage.Errorf("backends", "backend %s describes no durability settings to put under a power fault (backends that do: %s)", be.Name, strings.Join(durableBackends(), ", "))
		}
		rc := d.Recipe
		if one {
			rc = recipe
		}
		var out []variant
		for _, s := range d.All() {
			out = append(out, variant{recipes: []string{rc}, settings: s, faults: []string{d.Fault}, why: d.Why,
				what: be.Name + "'s durability settings run"})
		}
		return out, nil
	case fromKnownBugs:
		return nil, nil // knownBugRows makes them
	case fromDeployments:
		if len(be.Deployments) == 0 {
			return nil, usage.Errorf("backends", "backend %s describes no deployments", be.Name)
		}
		var out []variant
		for _, dep := range be.Deployments {
			rcs := dep.Recipes
			if one {
				if !slices.Contains(rcs, recipe) {
					continue
				}
				rcs = []string{recipe}
			}
			out = append(out, variant{recipes: rcs, settings: dep.Settings, faults: dep.Faults, why: dep.Why,
				what: fmt.Sprintf("%s's %s deployment runs", be.Name, dep.Name)})
		}
		if len(out) == 0 {
			return nil, usage.Errorf("backends", "no deployment of backend %s runs recipe %s", be.Name, recipe)
		}
		return out, nil
	}
	recipes := be.Recipes
	switch {
	case one:
		recipes = []string{recipe}
	case !l.everyRecipe:
		recipes = be.Recipes[:1]
	}
	return []variant{{recipes: recipes}}, nil
}

// durableBackends are the backends that describe durability settings.
func durableBackends() []string {
	var out []string
	for _, be := range registry.All() {
		if be.Durability != nil {
			out = append(out, be.Name)
		}
	}
	return out
}

// builtinRows adds the rows of the built-in recipes of l.backends: each
// recipe (or the first, or the one named as backend:recipe) under each
// storage it can use and each fencing mode that storage takes — in the
// power and deployments presets, under each of the backend's settings.
func (l lists) builtinRows(add func(Row)) error {
	for _, sel := range l.backends {
		name, recipe, one := strings.Cut(sel, ":")
		be, ok := registry.Lookup(name)
		if !ok {
			return usage.Errorf("backends", "unknown backend %q (accepted: %s; backend:recipe picks one recipe)", name, strings.Join(registry.Names(), ", "))
		}
		if one && !slices.Contains(be.Recipes, recipe) {
			return usage.Errorf("backends", "backend %s has no recipe %q (accepted: %s)", name, recipe, strings.Join(be.Recipes, ", "))
		}
		if l.rowsFrom == fromKnownBugs {
			if err := knownBugRows(be, add); err != nil {
				return err
			}
			continue
		}
		vars, err := l.variants(be, recipe, one)
		if err != nil {
			return err
		}
		versions, err := rowVersions(be, l.serverVersions)
		if err != nil {
			return err
		}
		cluster := defaultCluster(be)
		for _, v := range vars {
			if err := l.variantRows(be, v, versions, cluster, add); err != nil {
				return err
			}
		}
	}
	return nil
}

// variantRows adds the rows of one variant of backend be.
func (l lists) variantRows(be registry.Info, v variant, versions []string, cluster registry.Cluster, add func(Row)) error {
	if err := be.CheckSettings(v.settings); err != nil {
		return err
	}
	faults, why := strings.Join(v.faults, ","), ""
	if len(v.faults) > 0 {
		why = fmt.Sprintf("%s only under %s", v.what, strings.Join(v.faults, ", "))
		if v.why != "" {
			why += " (" + v.why + ")"
		}
	}
	if l.faultsGiven {
		faults, why = "", "" // the columns asked for, on every row
	}
	for _, rc := range v.recipes {
		for _, st := range l.storages {
			shared := registry.IsSharedStorage(st)
			switch {
			case shared && cluster == registry.ClusterInProcess && st != registry.DefaultStorage:
				continue // an in-process run has only the fenced node
			case !shared && !slices.Contains(be.Storages, st):
				continue // another backend's own storage
			}
			fs := l.fencing
			if !shared {
				fs = []string{"none"} // the backend guards it itself
			}
			for _, sv := range versions {
				for _, lc := range l.leaseChecks {
					if lc == registry.LeaseCheckAll {
						lc = "" // the default: rows read as they always did
					}
					for _, f := range fs {
						r := Row{Backend: be.Name, Recipe: rc, Storage: st, Fencing: f, Cluster: cluster, LeaseCheck: lc, ServerVersion: sv,
							Faults: faults, FaultsWhy: why}
						if v.settings.Name != "" {
							r = r.withSettings(v.settings)
						}
						add(r)
					}
				}
			}
		}
	}
	return nil
}

// rowVersions are the server versions be's rows take from the
// --server-versions list: each listed one (all must be be's), or one row
// with the matrix's own ("") when nothing is listed or be has one build.
func rowVersions(be registry.Info, list []string) ([]string, error) {
	if len(list) == 0 || len(be.Versions) == 0 {
		return []string{""}, nil
	}
	for _, v := range list {
		if slices.Contains(be.Versions, v) {
			continue
		}
		// An exact release (etcd 3.5.4): whether the proxy serves it
		// is asked when the cell is resolved, before the first run.
		if r := be.Releases; r != nil {
			if err := r.Check(v); err == nil {
				continue
			}
			return nil, usage.Errorf("server-versions", "backend %s has no server version %q (accepted: %s, or %s)", be.Name, v, strings.Join(be.Versions, ", "), r.What)
		}
		return nil, usage.Errorf("server-versions", "backend %s has no server version %q (accepted: %s)", be.Name, v, strings.Join(be.Versions, ", "))
	}
	return list, nil
}

// CheckRuns refuses a --runs out of its range, 1 to 100. Expand asks it;
// so does the CLI for a 0 given on purpose, which Spec reads as the
// default.
func CheckRuns(n int) error {
	if n < 1 || n > 100 {
		return usage.Errorf("runs", "%d is out of range (accepted: 1 to 100)", n)
	}
	return nil
}

// CheckTimeLimit refuses a --time-limit out of its range, 1s to 24h, as
// CheckRuns does --runs.
func CheckTimeLimit(d time.Duration) error {
	if d < time.Second || d > 24*time.Hour {
		return usage.Errorf("time-limit", "%s is out of range (accepted: 1s to 24h, e.g. 20s)", d)
	}
	return nil
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

// defaultCluster is where a backend runs when the matrix does not say:
// its first cluster (in process for the memory backend, Docker for the
// servers).
func defaultCluster(b registry.Info) registry.Cluster { return b.Clusters[0] }

// expandClients makes the rows of spec.Clients (fenced storage, each
// fencing mode) and says whether the built-in rows of --backends run too.
// It keeps each client directory it reads in m.clients.
func (m *Matrix) expandClients(spec Spec, fencing []string) ([]Row, bool, error) {
	if len(spec.Clients) == 0 {
		return nil, true, nil
	}
	builtin := len(spec.Backends) > 0
	var rows []Row
	for _, sel := range spec.Clients {
		dir, backends := sel, spec.Backends
		if name, rest, ok := strings.Cut(sel, ":"); ok {
			if _, known := registry.Lookup(name); known {
				dir, backends = rest, []string{name}
			}
		}
		if dir == sel && len(spec.Backends) == 0 {
			return nil, false, usage.Errorf("client", "%s: name the lock service it speaks to, as BACKEND:DIR (e.g. zookeeper:%s) or with --backends", sel, sel)
		}
		if dir == sel {
			builtin = false // --backends names this client's services
		}
		cl, err := clientdir.Load(dir)
		if err != nil {
			return nil, false, usage.Errorf("client", "%v", err)
		}
		if m.clients == nil {
			m.clients = map[string]*clientdir.Client{}
		}
		m.clients[dir] = cl
		for _, be := range backends {
			if strings.Contains(be, ":") {
				return nil, false, usage.Errorf("backends", "%s: a recipe means nothing for --client %s; name the backend alone", be, dir)
			}
			info, ok := registry.Lookup(be)
			if !ok {
				return nil, false, usage.Errorf("backends", "unknown backend %q (accepted: %s)", be, strings.Join(registry.Names(), ", "))
			}
			versions, err := rowVersions(info, spec.ServerVersions)
			if err != nil {
				return nil, false, err
			}
			for _, v := range versions {
				for _, f := range fencing {
					rows = append(rows, Row{Backend: be, Recipe: cl.Manifest.Name + " (client)", Storage: registry.DefaultStorage,
						Fencing: f, Cluster: registry.ClusterDocker, Client: dir, ServerVersion: v})
				}
			}
		}
	}
	return rows, builtin, nil
}
