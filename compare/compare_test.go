package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compare/result"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/runstore"
)

func hasRow(m *Matrix, r Row) bool { return slices.Contains(m.Rows, r) }

func docker(backend, recipe, storage, fencing string) Row {
	return Row{Backend: backend, Recipe: recipe, Storage: storage, Fencing: fencing, Cluster: "docker"}
}

func TestExpandCompareQuickPreset(t *testing.T) {
	m, err := Expand(Spec{Preset: "quick", Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if m.Runs != 1 || m.TimeLimit != 15*time.Second || m.Seed != 7 {
		t.Errorf("runs %d, time limit %s, seed %d", m.Runs, m.TimeLimit, m.Seed)
	}
	if !slices.Equal(m.Faults, []string{"pause-holder"}) {
		t.Errorf("faults %v", m.Faults)
	}
	var want []Row
	for _, b := range registry.All() {
		if b.Name == "memory" {
			continue
		}
		for _, f := range []string{"none", "all"} {
			want = append(want, docker(b.Name, b.Recipes[0], "fenced", f))
		}
	}
	if !slices.Equal(m.Rows, want) {
		t.Errorf("rows\n%v\nwant\n%v", m.Rows, want)
	}
	if !hasRow(m, docker("etcd", "mutex", "fenced", "none")) || !hasRow(m, docker("redis", "setnx", "fenced", "all")) {
		t.Errorf("rows %v", m.Rows)
	}
	base := DefaultBase()
	if m.Base.Clients != 5 || m.Base.Keys != 1 || m.Base.LeaseTTL != 2*time.Second || m.Base.Work != 10*time.Millisecond ||
		m.Base.NemesisInterval != 2*time.Second || m.Base.CheckTimeout != 5*time.Minute || m.Base.Nodes != 3 || m.Base.Clients != base.Clients {
		t.Errorf("base %+v", m.Base)
	}
	cfg := m.Config(m.Rows[0], "pause-holder", 2, "/s")
	if cfg.Seed != 9 || cfg.Store != "/s" || cfg.Cluster != "docker" || !slices.Equal(cfg.Nemesis, []string{"pause-holder"}) || cfg.TimeLimit != 15*time.Second {
		t.Errorf("config %+v", cfg)
	}
}

func TestExpandCompareFullPreset(t *testing.T) {
	m, err := Expand(Spec{Preset: "full"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Runs != 3 || m.TimeLimit != 20*time.Second {
		t.Errorf("runs %d, time limit %s", m.Runs, m.TimeLimit)
	}
	if !slices.Equal(m.Faults, []string{"pause-holder", "pause", "partition", "kill"}) {
		t.Errorf("faults %v", m.Faults)
	}
	for _, r := range []Row{
		docker("etcd", "mutex", "fenced", "writes"), docker("etcd", "mutex", "etcd", "none"),
		docker("redis", "redlock", "fenced", "none"), docker("redis", "setnx-incr", "fenced", "all"),
		docker("zookeeper", "lock", "fenced", "writes"),
		docker("kubernetes", "leaderelection", "fenced", "none"), docker("kubernetes", "leaderelection", "fenced", "all"),
	} {
		if !hasRow(m, r) {
			t.Errorf("no row %s", r)
		}
	}
	etcdOwn := 0
	for _, r := range m.Rows {
		if r.Backend == "memory" {
			t.Errorf("memory in the default backends: %s", r)
		}
		if r.Storage == "etcd" {
			etcdOwn++
			if r.Backend != "etcd" || r.Fencing != "none" {
				t.Errorf("row %s", r)
			}
		}
	}
	etcdInfo, _ := registry.Lookup("etcd")
	if etcdOwn != len(etcdInfo.Recipes) {
		t.Errorf("%d rows of etcd's own storage, want one per etcd recipe (%d)", etcdOwn, len(etcdInfo.Recipes))
	}
	// Every recipe of every backend but memory, on the fenced node under
	// three fencing modes, on postgres's storage too when it is built in.
	want := len(etcdInfo.Recipes) // etcd's own storage
	storages := 1
	if registry.IsSharedStorage("postgres") {
		storages = 2
		if !hasRow(m, docker("redis", "setnx", "postgres", "writes")) {
			t.Errorf("no postgres storage row")
		}
	}
	for _, b := range registry.All() {
		if b.Name != "memory" {
			want += len(b.Recipes) * storages * 3
		}
	}
	if len(m.Rows) != want {
		t.Errorf("%d rows, want %d: %v", len(m.Rows), want, m.Rows)
	}
}

// The kleppmann preset: the clock faults beside pause-holder, on the
// recipes of docs/kleppmann-redlock.md's table; where a clock fault cannot
// reach the servers (etcd) the cell says why instead of running.
func TestExpandCompareKleppmannPreset(t *testing.T) {
	m, err := Expand(Spec{Preset: "kleppmann", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Faults, []string{"clock-jump", "clock-jump-quorum", "clock-strobe", "pause-holder"}) || m.Base.Work != time.Second ||
		m.Base.Options["clock-targets"] != "majority" || !m.Base.StopOnViolation {
		t.Errorf("faults %v, base %+v", m.Faults, m.Base)
	}
	var recipes []string
	for _, r := range m.Rows {
		if r.Fencing == "none" {
			recipes = append(recipes, r.Backend+":"+r.Recipe)
		}
	}
	if len(recipes) != 5 || recipes[0] != "redis:redlock" || recipes[2] != "postgres:lease" {
		t.Errorf("rows %v", recipes)
	}
	for _, r := range m.Rows {
		why := m.Applicable(r, "clock-jump")
		if (r.Backend == "etcd") != (why != "") {
			t.Errorf("%s under clock-jump: %q", r, why)
		}
		if r.Backend == "etcd" && !strings.Contains(why, "static Go binary") {
			t.Errorf("etcd's clock cell does not say why: %q", why)
		}
		// The preset's --clock-targets is clock-jump's alone: the other
		// columns run (a first try of the preset here ran clock-jump
		// only, every other cell refused for the flag).
		if why := m.Applicable(r, "pause-holder"); why != "" {
			t.Errorf("%s under pause-holder: %q", r, why)
		}
		if why := m.Applicable(r, "clock-strobe"); (r.Backend == "etcd") != (why != "") {
			t.Errorf("%s under clock-strobe: %q", r, why)
		}
		if why := m.Applicable(r, "clock-jump-quorum"); r.Recipe == "redlock" && why != "" {
			t.Errorf("%s under clock-jump-quorum: %q", r, why)
		}
		if cfg := m.Config(r, "clock-jump", 0, "x"); cfg.Options["clock-targets"] != "majority" {
			t.Errorf("%s under clock-jump runs with options %v", r, cfg.Options)
		}
		if cfg := m.Config(r, "pause-holder", 0, "x"); cfg.Options["clock-targets"] != "" {
			t.Errorf("%s under pause-holder runs with options %v", r, cfg.Options)
		}
	}
}

// The power preset: each backend that describes durability settings, its
// safe and relaxed settings (its own flags, as it describes them) as rows
// of its measured recipe, fenced, each under its own power fault alone;
// the other column says why it is not run.
func TestExpandComparePowerPreset(t *testing.T) {
	m, err := Expand(Spec{Preset: "power", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m.Runs != 3 || m.TimeLimit != 30*time.Second || !m.Base.StopOnViolation || m.Base.NemesisInterval != PowerNemesisInterval {
		t.Errorf("runs %d, time limit %s, base %+v", m.Runs, m.TimeLimit, m.Base)
	}
	// A power cut's question is answered by the check itself: the runs
	// keep their faults' --min-exposures (0), not the presets' 1.
	if m.Base.MinExposures != 0 || m.Base.Given["min-exposures"] {
		t.Errorf("min-exposures %d, given %v", m.Base.MinExposures, m.Base.Given)
	}
	var want []Row
	var faults []string
	for _, be := range registry.All() {
		d := be.Durability
		if d == nil {
			continue
		}
		if be.DataDir == "" {
			t.Errorf("%s describes durability settings but keeps nothing on disk for a power fault to take", be.Name)
		}
		if !slices.Contains(faults, d.Fault) {
			faults = append(faults, d.Fault)
		}
		if len(d.Relaxed) == 0 || d.Safe.Name != "safe" || len(d.Safe.Options) == 0 {
			t.Errorf("%s: durability %+v", be.Name, d)
		}
		for _, s := range d.All() {
			r := docker(be.Name, d.Recipe, "fenced", "all")
			r.Faults = d.Fault
			r.FaultsWhy = be.Name + "'s durability settings run only under " + d.Fault + " (" + d.Why + ")"
			want = append(want, r.withSettings(s))
		}
	}
	for _, name := range []string{"etcd", "nats", "postgres", "redis", "zookeeper"} {
		if !slices.ContainsFunc(want, func(r Row) bool { return r.Backend == name }) {
			t.Errorf("backend %s has no rows in the power preset", name)
		}
	}
	if slices.ContainsFunc(m.Rows, func(r Row) bool { return r.Backend == "kubernetes" || r.Backend == "memory" }) {
		t.Errorf("a backend without durability settings has rows: %v", m.Rows)
	}
	if !slices.Equal(m.Rows, want) {
		t.Errorf("rows\n%v\nwant\n%v", m.Rows, want)
	}
	if !slices.Equal(m.Faults, faults) || !slices.Contains(faults, "power-loss") || !slices.Contains(faults, "power-loss-all") {
		t.Errorf("faults %v, want %v", m.Faults, faults)
	}
	for _, r := range m.Rows {
		for _, f := range m.Faults {
			why := m.Applicable(r, f)
			if (f == r.Faults) != (why == "") {
				t.Errorf("%s under %s: %q", r, f, why)
			}
			if f != r.Faults && !strings.Contains(why, "run only under "+r.Faults) {
				t.Errorf("%s under %s does not say why it is not run: %q", r, f, why)
			}
		}
		// The row's settings are the run's flags, and the tables name them.
		cfg := m.Config(r, r.Faults, 0, "/s")
		for flag, v := range r.settings().Options {
			if cfg.Options[flag] != v || !strings.Contains(r.SettingsLabel(), "--"+flag+" "+v) || !strings.Contains(r.String(), r.SettingsLabel()) {
				t.Errorf("%s: options %v, label %q", r, cfg.Options, r.SettingsLabel())
			}
		}
	}
	redisSafe := docker("redis", "setnx-incr", "fenced", "all")
	redisSafe.Settings, redisSafe.Options = "safe", "redis-persistence=aof-always"
	redisSafe.Faults = "power-loss"
	if i := slices.IndexFunc(m.Rows, func(r Row) bool { return r.Backend == "redis" && r.Settings == "safe" }); i < 0 ||
		m.Rows[i].Options != redisSafe.Options || m.Rows[i].Recipe != "setnx-incr" || m.Rows[i].SettingsLabel() != "safe: --redis-persistence aof-always" {
		t.Errorf("redis's safe row: %v", m.Rows)
	}
	for _, c := range []struct {
		backend, relaxed string
	}{{"etcd", "etcd-unsafe-no-fsync=true"}, {"zookeeper", "zookeeper-force-sync=no"}, {"postgres", "postgres-synchronous-commit=off"},
		{"redis", "redis-persistence=aof-everysec"}, {"nats", "nats-sync-interval=default"}} {
		if !slices.ContainsFunc(m.Rows, func(r Row) bool { return r.Backend == c.backend && r.Settings == "relaxed" && r.Options == c.relaxed }) {
			t.Errorf("no relaxed row %s %s", c.backend, c.relaxed)
		}
	}

	// --backends narrows it, backend:recipe picks the recipe; --faults
	// names the columns and every row runs them.
	m, err = Expand(Spec{Preset: "power", Backends: []string{"redis:setnx", "etcd"}, Faults: []string{"power-loss", "power-loss-all"}, Runs: 1, TimeLimit: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if m2, err := Expand(Spec{Preset: "power", Base: harness.Config{NemesisInterval: time.Second}}); err != nil || m2.Base.NemesisInterval != time.Second {
		t.Errorf("--nemesis-interval given does not override the preset's: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rows) != 4 || m.Rows[0].Recipe != "setnx" || m.Rows[2].Backend != "etcd" || m.Runs != 1 || m.TimeLimit != 20*time.Second || m.Base.NemesisInterval != PowerNemesisInterval {
		t.Errorf("rows %v, runs %d, time limit %s", m.Rows, m.Runs, m.TimeLimit)
	}
	for _, r := range m.Rows {
		if why := m.Applicable(r, "power-loss"); why != "" || r.Faults != "" {
			t.Errorf("%s under power-loss, asked for: %q", r, why)
		}
	}
	if _, err := Expand(Spec{Preset: "power", Backends: []string{"kubernetes"}}); err == nil || !strings.Contains(err.Error(), "no durability settings") {
		t.Errorf("a backend without durability settings: %v", err)
	}
}

// The redis-deployments preset: one master, Redlock and Sentinel side by
// side, each deployment's recipes as rows, fenced, each under the faults
// that have meaning for it (the backend's own description); the other
// cells say why they are not run.
func TestExpandCompareRedisDeploymentsPreset(t *testing.T) {
	m, err := Expand(Spec{Preset: RedisDeployments, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m.Runs != 3 || m.TimeLimit != 20*time.Second || m.Base.MinExposures != 1 || !m.Base.StopOnViolation {
		t.Errorf("runs %d, time limit %s, min exposures %d", m.Runs, m.TimeLimit, m.Base.MinExposures)
	}
	if want := []string{"pause-holder", "kill-leader", "kill", "pause-leader", "partition-primary", "partition-primary-clients"}; !slices.Equal(m.Faults, want) {
		t.Errorf("faults %v, want %v", m.Faults, want)
	}
	type rowWant struct {
		recipe, deployment, topology string
		faults                       []string
	}
	sentinelFaults := []string{"pause-holder", "kill-leader", "pause-leader", "partition-primary", "partition-primary-clients"}
	want := []rowWant{
		{"setnx", "single", "single", []string{"pause-holder", "kill-leader"}},
		{"setnx-incr", "single", "single", []string{"pause-holder", "kill-leader"}},
		{"redlock", "redlock", "single", []string{"pause-holder", "kill"}},
		{"setnx", "sentinel", "sentinel", sentinelFaults},
		{"setnx-incr", "sentinel", "sentinel", sentinelFaults},
		{"setnx-incr-wait", "sentinel", "sentinel", sentinelFaults},
	}
	if len(m.Rows) != len(want) {
		t.Fatalf("rows %v", m.Rows)
	}
	for i, w := range want {
		r := m.Rows[i]
		if r.Backend != "redis" || r.Recipe != w.recipe || r.Settings != w.deployment || r.Fencing != "all" || r.Storage != "fenced" {
			t.Errorf("row %d: %s, want %+v", i, r, w)
		}
		for _, f := range m.Faults {
			why := m.Applicable(r, f)
			if slices.Contains(w.faults, f) != (why == "") {
				t.Errorf("%s under %s: %q", r, f, why)
			}
			if why != "" && !strings.Contains(why, "redis's "+w.deployment+" deployment runs only under") {
				t.Errorf("%s under %s does not say why: %q", r, f, why)
			}
		}
		if cfg := m.Config(r, w.faults[0], 0, "/s"); cfg.Options["redis-topology"] != w.topology || cfg.Recipe != w.recipe {
			t.Errorf("%s: options %v", r, cfg.Options)
		}
	}
	// One recipe: only the deployments that run it.
	m, err = Expand(Spec{Preset: RedisDeployments, Backends: []string{"redis:setnx-incr"}, Fencing: []string{"none", "all"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rows) != 4 || m.Rows[0].Settings != "single" || m.Rows[2].Settings != "sentinel" || m.Rows[0].Fencing != "none" {
		t.Errorf("rows %v", m.Rows)
	}
	// Redlock's own column (kill) goes with its deployment.
	if slices.Contains(m.Faults, "kill") || !slices.Contains(m.Faults, "partition-primary") {
		t.Errorf("faults %v", m.Faults)
	}
	if _, err := Expand(Spec{Preset: RedisDeployments, Backends: []string{"etcd"}}); err == nil || !strings.Contains(err.Error(), "describes no deployments") {
		t.Errorf("a backend without deployments: %v", err)
	}
	if _, err := Expand(Spec{Preset: "etcd-deployments"}); err == nil || !strings.Contains(err.Error(), "unknown preset") {
		t.Errorf("a deployments preset of a backend without deployments: %v", err)
	}
}

// Rows with settings of their own show them in a column of their own,
// and compare.json has them by flag; a matrix without keeps its columns.
func TestCompareTablesShowSettings(t *testing.T) {
	cell := result.CompareCell{Fault: "power-loss", Verdicts: map[string]int{"valid": 1},
		Runs: []result.CompareRun{{Dir: "a/b", Seed: 1, Verdict: "valid"}}}
	c := &result.Comparison{Runs: 1, Seed: 1, Faults: []string{"power-loss"}, Rows: []result.CompareRow{
		{Backend: "redis", Recipe: "setnx-incr", Settings: "safe: --redis-persistence aof-always", Options: map[string]string{"redis-persistence": "aof-always"},
			Storage: "fenced", Fencing: "all", Cluster: "docker", Cells: []result.CompareCell{cell}}}}
	var md, page strings.Builder
	if err := result.WriteCompareMarkdown(&md, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| backend | recipe | settings | storage | fencing | power-loss |") ||
		!strings.Contains(md.String(), "| redis | setnx-incr | safe: --redis-persistence aof-always | fenced | all |") {
		t.Errorf("compare.md:\n%s", md.String())
	}
	if err := result.WriteCompareHTML(&page, c); err != nil || !strings.Contains(page.String(), "<th>settings</th>") ||
		!strings.Contains(page.String(), "<td>safe: --redis-persistence aof-always</td>") {
		t.Errorf("compare.html (%v):\n%s", err, page.String())
	}
	c.Rows[0].Settings, c.Rows[0].Options = "", nil
	md.Reset()
	if err := result.WriteCompareMarkdown(&md, c); err != nil || strings.Contains(md.String(), "settings |") {
		t.Errorf("a matrix without settings has the column (%v):\n%s", err, md.String())
	}
}

func TestExpandCompareJepsenEtcdPreset(t *testing.T) {
	m, err := Expand(Spec{Preset: "jepsen-etcd", Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The page puts the published figure beside the measured one.
	if !strings.Contains(m.Published, "about 18 %") || !strings.Contains(m.Published, "trusting") {
		t.Errorf("jepsen-etcd's published figure: %q", m.Published)
	}
	var md, page strings.Builder
	c := &result.Comparison{Preset: m.Preset, Published: m.Published, Runs: 1}
	if err := result.WriteCompareMarkdown(&md, c); err != nil || !strings.Contains(md.String(), "Published: Jepsen's analysis") {
		t.Errorf("compare.md does not show the published figure (%v):\n%s", err, md.String())
	}
	if err := result.WriteCompareHTML(&page, c); err != nil || !strings.Contains(page.String(), `id="published"`) {
		t.Errorf("compare.html does not show the published figure (%v)", err)
	}
	trusting := func(r Row) Row { r.LeaseCheck = "none"; return r }
	want := []Row{trusting(docker("etcd", "lock-rpc", "fenced", "none")), trusting(docker("etcd", "lock-rpc", "fenced", "all")),
		docker("etcd", "lock-rpc", "fenced", "none"), trusting(docker("etcd", "lock-rpc", "etcd", "none"))}
	if !slices.Equal(m.Rows, want) {
		t.Errorf("rows\n%v\nwant\n%v", m.Rows, want)
	}
	if !slices.Equal(m.Faults, []string{"pause-leader+pause-all"}) || m.Runs != 10 || m.TimeLimit != 120*time.Second {
		t.Errorf("faults %v, runs %d, time limit %s", m.Faults, m.Runs, m.TimeLimit)
	}
	b := m.Base
	if b.Nodes != 5 || b.Clients != 5 || b.Keys != 1 || b.LeaseTTL != 2*time.Second || b.Work != 10*time.Millisecond || b.Dwell != 2*time.Second ||
		b.PauseDuration != 5*time.Second || b.NemesisInterval != 5*time.Second || b.ServerVersion != "3.4" || b.StopOnViolation ||
		b.ClientEndpoints != "one" || b.ReadMix != 0.5 || b.AcquireTimeout != 5500*time.Millisecond {
		t.Errorf("base %+v", b)
	}
	test, err := harness.ResolveCell(m.Config(m.Rows[3], m.Faults[0], 0, "/s"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := test.Config()
	if cfg.ServerVersion != "3.4" || cfg.PauseDuration != 5*time.Second || cfg.Storage != "etcd" || cfg.StopOnViolation ||
		cfg.LeaseCheck != "none" || cfg.ClientEndpoints != "one" || !slices.Equal(cfg.Nemesis, []string{"pause-leader", "pause-all"}) {
		t.Errorf("config %+v", cfg)
	}
	if cfg := m.Config(m.Rows[2], m.Faults[0], 0, "/s"); cfg.LeaseCheck != "" {
		t.Errorf("the careful row runs with lease check %q", cfg.LeaseCheck)
	}

	// Flags given override the preset; --full-time is the preset's anyway.
	m, err = Expand(Spec{Preset: "jepsen-etcd", Runs: 2, TimeLimit: 5 * time.Second, Backends: []string{"etcd:mutex", "redis"},
		Storages: []string{"fenced"}, Base: harness.Config{Nodes: 3, LeaseTTL: 3 * time.Second, Dwell: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Runs != 2 || m.TimeLimit != 5*time.Second || m.Base.Nodes != 3 || m.Base.LeaseTTL != 3*time.Second || m.Base.Dwell != time.Second || m.Base.StopOnViolation {
		t.Errorf("runs %d, time limit %s, base %+v", m.Runs, m.TimeLimit, m.Base)
	}
	if !hasRow(m, trusting(docker("etcd", "mutex", "fenced", "all"))) || !hasRow(m, trusting(docker("redis", "setnx", "fenced", "none"))) {
		t.Errorf("rows %v", m.Rows)
	}
	// Redis cannot be bound to one server: the preset gives it every one.
	if cfg := m.Config(trusting(docker("redis", "setnx", "fenced", "none")), m.Faults[0], 0, "/s"); cfg.ClientEndpoints != "all" {
		t.Errorf("redis under the preset: client endpoints %q", cfg.ClientEndpoints)
	}
	if _, err := Expand(Spec{Preset: "jepsen-etcd", LeaseChecks: []string{"sometimes"}}); err == nil || !strings.Contains(err.Error(), "accepted: all, none") {
		t.Errorf("a bad --lease-checks: %v", err)
	}
	if _, err := Expand(Spec{Faults: []string{"pause-leader+nope"}, Backends: []string{"etcd"}}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a bad fault in a + column: %v", err)
	}
	// A backend with one server build runs without the preset's version.
	for _, r := range m.Rows {
		if cfg := m.Config(r, "pause-leader", 0, "/s"); (cfg.ServerVersion != "") != (r.Backend == "etcd") {
			t.Errorf("%s: server version %q", r, cfg.ServerVersion)
		}
	}
}

func TestExpandCompareFlags(t *testing.T) {
	m, err := Expand(Spec{
		Backends: []string{"memory", "redis:setnx-incr", "etcd"}, Storages: []string{"fenced", "etcd"},
		Faults: []string{"pause-holder", "partition"}, Fencing: []string{"all"}, Runs: 2, TimeLimit: 3 * time.Second,
		Base: harness.Config{LeaseTTL: 200 * time.Millisecond, NemesisInterval: 400 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Row{
		{Backend: "memory", Recipe: "lease", Storage: "fenced", Fencing: "all", Cluster: "inprocess"},
		docker("redis", "setnx-incr", "fenced", "all"),
		docker("etcd", "mutex", "fenced", "all"),
		docker("etcd", "mutex", "etcd", "none"),
		docker("etcd", "lock-rpc", "fenced", "all"),
		docker("etcd", "lock-rpc", "etcd", "none"),
	}
	if !slices.Equal(m.Rows, want) {
		t.Errorf("rows\n%v\nwant\n%v", m.Rows, want)
	}
	if m.Runs != 2 || m.TimeLimit != 3*time.Second || m.Base.LeaseTTL != 200*time.Millisecond || m.Base.NemesisInterval != 400*time.Millisecond || m.Base.Clients != 5 {
		t.Errorf("matrix %+v", m)
	}
	if m.Applicable(want[0], "partition") == "" || m.Applicable(want[0], "pause-holder") != "" || m.Applicable(want[2], "partition") != "" {
		t.Error("applicability: memory in-process cannot partition, etcd can")
	}
	// Redis with one server has nothing to cut apart: the run would be
	// refused, so the cell is not applicable.
	if why := m.Applicable(want[1], "partition"); !strings.Contains(why, "nothing to cut") || m.Applicable(want[1], "pause-holder") != "" {
		t.Errorf("applicability: redis setnx-incr under partition: %q", why)
	}
	// No preset, a bare name: every recipe.
	m, err = Expand(Spec{Backends: []string{"redis"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rows) != 2*len(mustBackend(t, "redis").Recipes) || m.TimeLimit != 20*time.Second || m.Runs != 1 {
		t.Errorf("rows %v, time limit %s", m.Rows, m.TimeLimit)
	}

	for _, c := range []struct {
		spec Spec
		flag string
	}{
		{Spec{Preset: "slow"}, "preset"},
		{Spec{Backends: []string{"mysql"}}, "backends"},
		{Spec{Backends: []string{"etcd:lease"}}, "backends"},
		{Spec{Faults: []string{"clock"}}, "faults"},
		{Spec{Faults: []string{"meteor"}}, "faults"},
		{Spec{Faults: []string{"pause", "pause"}}, "faults"},
		{Spec{Backends: []string{"memory"}, Faults: []string{"kill"}}, "faults"},
		{Spec{Fencing: []string{"some"}}, "fencing"},
		{Spec{Storages: []string{"s3"}}, "storages"},
		{Spec{Backends: []string{"redis"}, Storages: []string{"etcd"}}, "storages"},
		{Spec{Runs: -1}, "runs"},
		{Spec{Runs: 1000}, "runs"},
		{Spec{TimeLimit: time.Millisecond}, "time-limit"},
		{Spec{Base: harness.Config{LeaseTTL: time.Hour}}, "lease-ttl"},
	} {
		_, err := Expand(c.spec)
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != c.flag {
			t.Errorf("%+v: error %v, want one naming --%s", c.spec, err, c.flag)
		}
	}
}

func mustBackend(t *testing.T, name string) registry.Info {
	b, ok := registry.Lookup(name)
	if !ok {
		t.Fatalf("no backend %s", name)
	}
	return b
}

func secondsPtr(s float64) *float64 { return &s }

func TestAggregateCell(t *testing.T) {
	runs := []result.CompareRun{
		{Verdict: "invalid", FirstViolationS: secondsPtr(4), AcquireOK: 100, AcquireFail: 0, AcquireInfo: 0, TimeLimitS: 10},
		{Verdict: "invalid", FirstViolationS: secondsPtr(1), AcquireOK: 80, AcquireFail: 10, AcquireInfo: 10, TimeLimitS: 10},
		{Verdict: "valid", AcquireOK: 60, TimeLimitS: 10},
		{Verdict: "invalid", FirstViolationS: secondsPtr(9), AcquireOK: 60, TimeLimitS: 10},
		{Verdict: "error", Error: "cluster did not start", TimeLimitS: 10},
	}
	c := AggregateCell("pause-holder", runs)
	if c.Verdicts["invalid"] != 3 || c.Verdicts["valid"] != 1 || c.Verdicts["error"] != 1 {
		t.Errorf("verdicts %v", c.Verdicts)
	}
	if got := c.VerdictText(); got != "invalid 3/5, valid 1/5, error 1/5" {
		t.Errorf("text %q", got)
	}
	if c.MedianFirstViolationS == nil || *c.MedianFirstViolationS != 4 {
		t.Errorf("median %v, want 4", c.MedianFirstViolationS)
	}
	// The runs with ops: (10 + 8 + 6 + 6) / 4 acquires per second.
	if c.AcquiresPerS != 7.5 {
		t.Errorf("acquires/s %v, want 7.5", c.AcquiresPerS)
	}
	if c.AcquireOKShare == nil || *c.AcquireOKShare != 300.0/320 {
		t.Errorf("ok share %v, want %v", c.AcquireOKShare, 300.0/320)
	}
	if c.Class() != "error" {
		t.Errorf("class %s", c.Class())
	}

	even := AggregateCell("pause", runs[:2])
	if *even.MedianFirstViolationS != 2.5 || even.VerdictText() != "invalid 2/2" || even.Class() != "invalid" {
		t.Errorf("median %v, text %q, class %s", *even.MedianFirstViolationS, even.VerdictText(), even.Class())
	}
	valid := AggregateCell("pause", runs[2:3])
	if valid.MedianFirstViolationS != nil || valid.VerdictText() != "valid 1/1" || valid.Class() != "valid" {
		t.Errorf("valid cell %+v", valid)
	}
	if got := valid.StatsText(); got != "first — · 6.0 acq/s · 100% ok" {
		t.Errorf("stats %q", got)
	}
	none := AggregateCell("kill", runs[4:])
	if none.AcquireOKShare != nil || none.AcquiresPerS != 0 || none.VerdictText() != "error 1/1" {
		t.Errorf("error cell %+v", none)
	}
}

func TestFirstViolationIsTheEarliestCulpritsCompletion(t *testing.T) {
	ops := []history.Op{
		{InvokeIndex: 3, Done: int64(5 * time.Second)},
		{InvokeIndex: 8, Done: int64(2 * time.Second)},
		{InvokeIndex: 9, Done: int64(1 * time.Second)},
	}
	res := models.Result{Verdict: models.Invalid, Keys: []models.KeyResult{
		{Key: "k0", Verdict: models.Invalid, Culprits: []int64{3, 9}},
		{Key: "k1", Verdict: models.Invalid, Culprits: []int64{8, 9}},
		{Key: "k2", Verdict: models.Valid},
	}}
	if d, ok := FirstViolation(res, ops); !ok || d != 2*time.Second {
		t.Errorf("first violation %s %v, want 2s", d, ok)
	}
	if _, ok := FirstViolation(models.Result{Verdict: models.Valid}, ops); ok {
		t.Error("a valid result has no violation")
	}
}

func TestCompareMarkdown(t *testing.T) {
	c := &result.Comparison{
		Started: "2026-01-02T03:04:05Z", Preset: "quick", Seed: 42, Runs: 2, TimeLimitS: 15, DurationS: 61,
		Faults: []string{"pause-holder", "partition"},
		Rows: []result.CompareRow{
			{Backend: "etcd", Recipe: "mutex", Storage: "fenced", Fencing: "none", Cluster: "docker", Cells: []result.CompareCell{
				AggregateCell("pause-holder", []result.CompareRun{
					{Dir: "etcd-mutex-fenced-none-pause-holder/A", Verdict: "invalid", FirstViolationS: secondsPtr(3), AcquireOK: 450, AcquireFail: 50, TimeLimitS: 15},
					{Dir: "etcd-mutex-fenced-none-pause-holder/B", Verdict: "invalid", FirstViolationS: secondsPtr(5), AcquireOK: 450, AcquireFail: 50, TimeLimitS: 15},
				}),
				AggregateCell("partition", []result.CompareRun{
					{Dir: "etcd-mutex-fenced-none-partition/A", Verdict: "valid", AcquireOK: 300, TimeLimitS: 15},
					{Verdict: "error", Error: "setting up the system under test:\n  no image", TimeLimitS: 15},
				}),
			}},
			{Backend: "memory", Recipe: "lease", Storage: "fenced", Fencing: "all", Cluster: "inprocess", Cells: []result.CompareCell{
				AggregateCell("pause-holder", []result.CompareRun{{Dir: "m/A", Verdict: "valid", AcquireOK: 30, TimeLimitS: 15}}),
				{Fault: "partition", NotApplicable: "an in-process run injects only pause, pause-holder"},
			}},
		},
	}
	c.Errors = countErrors(c)
	var b strings.Builder
	if err := result.WriteCompareMarkdown(&b, c); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"# fencecheck compare\n",
		"preset quick; 2 runs per cell of 15 s each; seed 42",
		"**1 run could not be carried out.**",
		"| backend | recipe | storage | fencing | pause-holder | partition |\n|---|---|---|---|---|---|\n",
		"| etcd | mutex | fenced | none | invalid 2/2<br>first 4.0 s · 30.0 acq/s · 90% ok<br>[1](etcd-mutex-fenced-none-pause-holder/A/report.html) [2](etcd-mutex-fenced-none-pause-holder/B/report.html) | valid 1/2, error 1/2<br>first — · 20.0 acq/s · 100% ok<br>[1](etcd-mutex-fenced-none-partition/A/report.html) |\n",
		"| memory | lease | fenced | all | valid 1/1<br>first — · 2.0 acq/s · 100% ok<br>[1](m/A/report.html) | n/a |\n",
		"n/a: an in-process run injects only pause, pause-holder.",
		"## Runs that could not be carried out\n\n- etcd mutex fenced none × partition, run 2: setting up the system under test: no image\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("compare.md lacks %q:\n%s", want, md)
		}
	}
	if ExitCode(c) != harness.ExitFailed {
		t.Error("a comparison with an error exits 255")
	}
	dir := t.TempDir()
	if err := result.WriteComparison(dir, c); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, "compare.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), `href="etcd-mutex-fenced-none-pause-holder/B/report.html"`) || !strings.Contains(string(html), `class="cell invalid"`) {
		t.Errorf("compare.html:\n%s", html)
	}
}

// `check compare --backends memory --faults pause-holder --time-limit 3s`
// with short leases, for real, in-process.
func TestCompareMemoryEndToEnd(t *testing.T) {
	m, err := Expand(Spec{
		Backends: []string{"memory"}, Faults: []string{"pause-holder"}, TimeLimit: 3 * time.Second, Seed: 1,
		Base: harness.Config{LeaseTTL: 200 * time.Millisecond, NemesisInterval: 400 * time.Millisecond, Work: 5 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "compare")
	var progress strings.Builder
	c, err := Run(quiet(), m, dir, &progress)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(progress.String())
	if !strings.Contains(progress.String(), "[1/2] memory lease fenced none × pause-holder, run 1/1 (seed 1); 1 left after this") {
		t.Errorf("progress:\n%s", progress.String())
	}
	for _, f := range []string{"compare.html", "compare.md", "compare.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if len(c.Rows) != 2 || c.Rows[0].Fencing != "none" || c.Rows[1].Fencing != "all" {
		t.Fatalf("rows %+v", c.Rows)
	}
	unfenced, fenced := c.Rows[0].Cells[0], c.Rows[1].Cells[0]
	if unfenced.VerdictText() != "invalid 1/1" || fenced.VerdictText() != "valid 1/1" {
		t.Errorf("unfenced %q (want invalid 1/1), fenced %q (want valid 1/1)", unfenced.VerdictText(), fenced.VerdictText())
	}
	if unfenced.MedianFirstViolationS == nil || *unfenced.MedianFirstViolationS <= 0 || *unfenced.MedianFirstViolationS > 3 {
		t.Errorf("first violation %v", unfenced.MedianFirstViolationS)
	}
	for _, cell := range []result.CompareCell{unfenced, fenced} {
		if cell.AcquiresPerS <= 0 || cell.AcquireOKShare == nil || len(cell.Runs) != 1 {
			t.Errorf("cell %+v", cell)
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(cell.Runs[0].Dir), "report.html")); err != nil {
			t.Errorf("the cell's link is broken: %v", err)
		}
	}
	// Each row names what its servers said they are: in process, this
	// build of fencecheck.
	servers := c.Rows[0].ServersText()
	if !strings.HasPrefix(servers, "fencecheck ") || c.Rows[1].ServersText() != servers || unfenced.Runs[0].Servers != servers {
		t.Errorf("servers: rows %q and %q, run %q; want the in-process build, \"fencecheck …\"", servers, c.Rows[1].ServersText(), unfenced.Runs[0].Servers)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "compare.md"))
	if !strings.Contains(string(md), "| memory<br>"+servers+" | lease | fenced | none | invalid 1/1<br>") || !strings.Contains(string(md), "| memory<br>"+servers+" | lease | fenced | all | valid 1/1<br>") {
		t.Errorf("compare.md:\n%s", md)
	}
	if ExitCode(c) != 0 {
		t.Errorf("exit code %d, want 0", ExitCode(c))
	}
}

// The settled answers, through the compare runner, three runs at a time:
// an unfenced lease under a paused holder is unsafe on every backend;
// fencing every op (or etcd's guarded transaction) makes it safe.
func TestDockerKnownAnswers(t *testing.T) {
	bin := dockerOrSkip(t)
	type answer struct {
		row  Row
		want models.Verdict
	}
	all := []answer{
		{docker("etcd", "mutex", "fenced", "none"), models.Invalid},
		{docker("zookeeper", "lock", "fenced", "none"), models.Invalid},
		{docker("postgres", "lease", "fenced", "none"), models.Invalid},
		{docker("redis", "setnx", "fenced", "none"), models.Invalid},
		{docker("etcd", "mutex", "fenced", "all"), models.Valid},
		{docker("zookeeper", "lock", "fenced", "all"), models.Valid},
		{docker("postgres", "lease", "fenced", "all"), models.Valid},
		{docker("redis", "setnx-incr", "fenced", "all"), models.Valid},
		{docker("etcd", "mutex", "etcd", "none"), models.Valid},
	}
	var answers []answer
	want := map[Row]models.Verdict{}
	for _, a := range all {
		b, ok := registry.Lookup(a.row.Backend)
		if !ok || !slices.Contains(b.Recipes, a.row.Recipe) {
			t.Logf("skipping %s: not in this build", a.row)
			continue
		}
		answers = append(answers, a)
		want[a.row] = a.want
	}
	base := DefaultBase()
	base.AgentBinary = bin
	// Three runs at a time: the verdicts are the ones these cells have
	// always given one by one with the same seed (issue 39's known
	// answer: --parallel 3 agrees with --parallel 1).
	m := &Matrix{Faults: []string{"pause-holder"}, Runs: 1, TimeLimit: 12 * time.Second, Seed: 1, Base: base, Parallel: 3}
	for _, a := range answers {
		m.Rows = append(m.Rows, a.row)
	}
	dir := t.TempDir()
	c, err := Run(quiet(), m, dir, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "compare.md"))
	t.Logf("compare.md:\n%s", md)
	wall := map[string]float64{}
	var total float64
	for _, r := range c.Rows {
		row := Row{Backend: r.Backend, Recipe: r.Recipe, Storage: r.Storage, Fencing: r.Fencing, Cluster: registry.Cluster(r.Cluster)}
		cell := r.Cells[0]
		for _, run := range cell.Runs {
			wall[r.Backend] += run.DurationS
			total += run.DurationS
		}
		wantText := string(want[row]) + " 1/1"
		if got := cell.VerdictText(); got != wantText {
			var detail string
			for _, run := range cell.Runs {
				detail += " " + run.Dir + " " + run.Error
			}
			t.Errorf("%s under pause-holder: %s, want %s (%s)", row, got, wantText, strings.TrimSpace(detail))
		}
	}
	for _, b := range registry.All() {
		if s, ok := wall[b.Name]; ok && total > 0 {
			t.Logf("%-10s %5.1f s, %4.1f%% of the suite's run time", b.Name, s, 100*s/total)
		}
	}
}

// A comparison interrupted in its only run: the cell says unknown, not
// valid, and the comparison exits as interrupted.
func TestCompareInterruptedRunIsUnknownInItsCell(t *testing.T) {
	m, err := Expand(Spec{
		Backends: []string{"memory"}, Faults: []string{"pause"}, Fencing: []string{"all"}, TimeLimit: 30 * time.Second, Seed: 1,
		Base: harness.Config{LeaseTTL: 200 * time.Millisecond, NemesisInterval: 400 * time.Millisecond, Work: 5 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	stop, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(1500*time.Millisecond, cancel)
	c, err := Run(harness.Signals{Stop: stop, Abort: context.Background()}, m, filepath.Join(t.TempDir(), "compare"), nil)
	if err != nil {
		t.Fatal(err)
	}
	cell := c.Rows[0].Cells[0]
	if cell.VerdictText() != "unknown 1/1" {
		t.Errorf("the interrupted run's cell says %q, want unknown 1/1", cell.VerdictText())
	}
	if ExitCode(c) != harness.ExitFailed {
		t.Errorf("exit code %d, want %d", ExitCode(c), harness.ExitFailed)
	}
}

// --client rows are named after the client and run on the fenced
// storage; a bare DIR needs --backends, which then adds no built-in rows.
func TestExpandClients(t *testing.T) {
	dir := "../examples/clients/redislock"
	m, err := Expand(Spec{Clients: []string{"redis:" + dir}})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rows) != 2 || m.Rows[0].Recipe != "redislock (client)" || m.Rows[0].Client != dir || m.Rows[1].Fencing != "all" {
		t.Fatalf("rows %+v", m.Rows)
	}
	if cfg := m.Config(m.Rows[0], "pause-holder", 0, "s"); cfg.ClientDir != dir || cfg.Recipe != "" {
		t.Errorf("config %+v", cfg)
	}
	m, err = Expand(Spec{Clients: []string{dir}, Backends: []string{"redis"}})
	if err != nil || len(m.Rows) != 2 {
		t.Fatalf("bare dir with --backends: %v %+v", err, m)
	}
	if _, err := Expand(Spec{Clients: []string{dir}}); err == nil || !strings.Contains(err.Error(), "BACKEND:DIR") {
		t.Errorf("bare dir without --backends: %v", err)
	}
	if _, err := Expand(Spec{Clients: []string{"redis:/nonexistent"}}); err == nil || !strings.Contains(err.Error(), "no such directory") {
		t.Errorf("missing dir: %v", err)
	}
}

// A matrix with no cell that can run says why its cells cannot, not the
// in-process rule when no row is in process.
func TestNoCellCanRunSaysWhy(t *testing.T) {
	_, err := Expand(Spec{Backends: []string{"etcd"}, Faults: []string{"clock-strobe"}, Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "no cell can run") || !strings.Contains(err.Error(), "static Go binary") ||
		strings.Contains(err.Error(), "in-process") {
		t.Errorf("etcd under clock-strobe alone: %v", err)
	}
	_, err = Expand(Spec{Backends: []string{"memory"}, Faults: []string{"partition"}, Seed: 1})
	if err == nil || !strings.Contains(err.Error(), "an in-process run injects only") {
		t.Errorf("memory under partition alone: %v", err)
	}
}

// A cell of three runs: its pooled exposures are the sum of what each
// run's results.json counted, and its bound is taken over that pool.
func TestCompareCellPoolsItsRunsResults(t *testing.T) {
	m, err := Expand(Spec{
		Backends: []string{"memory"}, Faults: []string{"pause-holder"}, Fencing: []string{"all"}, Runs: 3, TimeLimit: 2 * time.Second, Seed: 5,
		Base: harness.Config{LeaseTTL: 200 * time.Millisecond, NemesisInterval: 300 * time.Millisecond, Work: 5 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "compare")
	c, err := Run(quiet(), m, dir, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cell := c.Rows[0].Cells[0]
	if len(cell.Runs) != 3 || cell.Exposures == nil || cell.ExposureRuns != 3 {
		t.Fatalf("cell %+v: want 3 runs whose exposures were pooled", cell)
	}
	var sum models.ExposureCounts
	for _, run := range cell.Runs {
		res, err := reports.ReadResults(filepath.Join(dir, filepath.FromSlash(run.Dir), runstore.ResultsFile))
		if err != nil {
			t.Fatal(err)
		}
		if res.Exposures == nil {
			t.Fatalf("%s: results.json has no exposures", run.Dir)
		}
		sum.Add(res.Exposures.ExposureCounts)
	}
	if *cell.Exposures != sum {
		t.Errorf("the cell pooled %+v, the runs' results.json sum to %+v", *cell.Exposures, sum)
	}
	if !sum.Exercised() || sum.Admitted != 0 || cell.AdmittedBound == nil || cell.AdmittedBound.Decided != sum.Decided() {
		t.Errorf("fenced storage under pause-holder: %+v, bound %+v; want exposures, none admitted, a bound over them", sum, cell.AdmittedBound)
	}
	md, _ := os.ReadFile(filepath.Join(dir, runstore.CompareMarkdown))
	if want := fmt.Sprintf("valid 3/3<br>%s", cell.ExposureText()); !strings.Contains(string(md), want) {
		t.Errorf("compare.md does not say %q:\n%s", want, md)
	}
}

// --verbose-build reaches every run's Config.
func TestVerboseBuildReachesEveryRun(t *testing.T) {
	spec := Spec{Preset: "quick", Seed: 1}
	spec.Base.VerboseBuild = true
	m, err := Expand(spec)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := m.Config(m.Rows[0], m.Faults[0], 0, "/s"); !cfg.VerboseBuild {
		t.Error("a run's Config lost --verbose-build")
	}
}

// The same matrix on two slots gives every cell the verdicts it gets on
// one, with each cell's runs in run order (seeds in sequence) whatever
// order they ended in, and the progress names the slots.
func TestCompareParallelMatchesSequential(t *testing.T) {
	verdicts := map[int][]string{}
	for _, width := range []int{1, 2} {
		m, err := Expand(Spec{
			Backends: []string{"memory"}, Faults: []string{"pause-holder"}, TimeLimit: 2 * time.Second, Seed: 7, Runs: 2, Parallel: width,
			Base: harness.Config{LeaseTTL: 200 * time.Millisecond, NemesisInterval: 400 * time.Millisecond, Work: 5 * time.Millisecond},
		})
		if err != nil {
			t.Fatal(err)
		}
		var progress strings.Builder
		c, err := Run(quiet(), m, filepath.Join(t.TempDir(), "compare"), &progress)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range c.Rows {
			cell := row.Cells[0]
			verdicts[width] = append(verdicts[width], cell.VerdictText())
			for k, r := range cell.Runs {
				if r.Seed != 7+int64(k) {
					t.Errorf("width %d, %s: run %d has seed %d, want %d", width, row.Fencing, k, r.Seed, 7+k)
				}
			}
		}
		if width > 1 && (!strings.Contains(progress.String(), "4 runs of 2s, 2 at a time") || !strings.Contains(progress.String(), "slot 2: ")) {
			t.Errorf("progress does not name the slots:\n%s", progress.String())
		}
	}
	if !slices.Equal(verdicts[1], verdicts[2]) || !slices.Equal(verdicts[1], []string{"invalid 2/2", "valid 2/2"}) {
		t.Errorf("one slot %v, two slots %v; want invalid 2/2 then valid 2/2 for both", verdicts[1], verdicts[2])
	}
}
