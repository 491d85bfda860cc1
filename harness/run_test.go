package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/fencecheck/fencecheck/backends/all" // the backends the tests run
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

func quiet() Signals {
	return Signals{Stop: context.Background(), Abort: context.Background()}
}

// memoryConfig is a short in-process test with leases short enough that
// several pauses fit in a few seconds.
func memoryConfig(t *testing.T, fencing string, nemesis ...string) Config {
	return Config{
		Backend: "memory", Fencing: fencing, Nemesis: nemesis, Clients: 5, Keys: 1,
		TimeLimit: 3 * time.Second, LeaseTTL: 200 * time.Millisecond, Work: 5 * time.Millisecond,
		NemesisInterval: 400 * time.Millisecond, CheckTimeout: time.Minute, Store: t.TempDir(),
	}
}

// runSeeds runs the same test under n seeds at once (in-process runs
// mostly sleep) and returns the verdicts.
func runSeeds(t *testing.T, base Config, n int) []models.Verdict {
	t.Helper()
	verdicts := make([]models.Verdict, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := base
			cfg.Seed = int64(i + 1)
			out, err := Run(quiet(), cfg, nil)
			if err != nil {
				t.Errorf("seed %d: %v", cfg.Seed, err)
				return
			}
			verdicts[i] = out.Result.Verdict
		}()
	}
	wg.Wait()
	return verdicts
}

func count(vs []models.Verdict, v models.Verdict) int {
	n := 0
	for _, x := range vs {
		if x == v {
			n++
		}
	}
	return n
}

func TestUnfencedLeaseUnderPausesIsFoundAlmostAlways(t *testing.T) {
	vs := runSeeds(t, memoryConfig(t, "none", "pause"), 20)
	if n := count(vs, models.Invalid); n < 19 {
		t.Fatalf("fencing none under pause: %d of 20 seeds invalid, want at least 19 (%v)", n, vs)
	}
}

func TestFencedLeaseUnderPausesIsNeverInvalid(t *testing.T) {
	for _, nem := range []string{"pause", "pause-holder"} {
		vs := runSeeds(t, memoryConfig(t, "all", nem), 20)
		if n := count(vs, models.Valid); n != 20 {
			t.Fatalf("fencing all under %s: %d of 20 seeds valid, want 20 (%v)", nem, n, vs)
		}
	}
}

func TestPauseHolderFindsTheAnomalyEveryTime(t *testing.T) {
	vs := runSeeds(t, memoryConfig(t, "none", "pause-holder"), 20)
	if n := count(vs, models.Invalid); n != 20 {
		t.Fatalf("fencing none under pause-holder: %d of 20 seeds invalid, want 20 (%v)", n, vs)
	}
}

func TestCleanRunIsValidAndWritesTheStore(t *testing.T) {
	cfg := memoryConfig(t, "none", "none")
	cfg.Keys = 3
	cfg.TimeLimit = 2 * time.Second
	out, err := Run(quiet(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Verdict != models.Valid {
		t.Fatalf("clean run: %s: %s", out.Result.Verdict, out.Result.Explanation)
	}
	if len(out.Result.Keys) != 3 {
		t.Fatalf("want 3 keys, got %d", len(out.Result.Keys))
	}
	for _, f := range []string{"history.jsonl", "results.json", "report.html", "check.log", "linearizability.html"} {
		if st, err := os.Stat(filepath.Join(out.Dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty in %s (%v)", f, out.Dir, err)
		}
	}
	latest, err := filepath.EvalSymlinks(filepath.Join(cfg.Store, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(out.Dir)
	if latest != want {
		t.Errorf("store/latest points at %s, want %s", latest, want)
	}
	// The service said what it is: in process, this build.
	if sv := out.Report.Servers; sv == nil || len(sv.Nodes) != 1 || sv.Nodes[0].Node != inProcessNode ||
		sv.Nodes[0].Version == "" || sv.Nodes[0].Version == reports.UnknownVersion || !strings.HasPrefix(sv.Summary, "fencecheck ") {
		t.Errorf("servers: %+v", sv)
	}
	// The final reads are in the history: the last ok read of each key.
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ops, _ := history.Pair(events)
	last := ops[len(ops)-2]
	if last.F != history.Read || last.Type != history.OK {
		t.Errorf("the history does not end with a final read: %+v", last)
	}
	// And after them, last, the end event: the run finished.
	h, err := history.LoadFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil || !h.Ended || h.Unfinished() != "" {
		t.Errorf("a finished run's history: ended %v, %q, %v", h.Ended, h.Unfinished(), err)
	}
}

// The saved history, checked again, gives the same verdict.
func TestAnalyzeAgreesWithTheRun(t *testing.T) {
	cfg := memoryConfig(t, "none", "pause-holder")
	out, err := Run(quiet(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ops, _ := history.Pair(events)
	// As `check report` re-checks: the check, then the cause named first
	// (the run does the same; without it a run whose paused holder's
	// write was accepted early names it and the re-check does not).
	checked := models.Check(context.Background(), ops, models.Options{})
	again := models.StaleWriteFirst(checked, ops)
	if again.Verdict != out.Result.Verdict || again.Explanation != out.Result.Explanation {
		t.Fatalf("re-check: %s %q; run: %s %q", again.Verdict, again.Explanation, out.Result.Verdict, out.Result.Explanation)
	}
	// As `check analyze` re-checks a streamed history: the cause found by
	// reading the file a second time.
	f, err := os.Open(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	streamed := models.StaleWriteFirstFrom(f, checked)
	if streamed.Verdict != out.Result.Verdict || streamed.Explanation != out.Result.Explanation {
		t.Fatalf("analyze's re-check: %s %q; run: %s %q", streamed.Verdict, streamed.Explanation, out.Result.Verdict, out.Result.Explanation)
	}
}

// An interrupt during the workload still heals, keeps the history, checks
// what was recorded and says the run was interrupted; its verdict is
// unknown.
func TestInterruptHealsAndKeepsTheHistory(t *testing.T) {
	cfg := memoryConfig(t, "all", "pause")
	cfg.TimeLimit = time.Minute
	cfg.NemesisInterval = 100 * time.Millisecond
	cfg.PauseDuration = 10 * time.Second // a client is surely frozen when the interrupt comes
	stop, cancel := context.WithCancel(context.Background())
	time.AfterFunc(1500*time.Millisecond, cancel)
	began := time.Now()
	out, err := Run(Signals{Stop: stop, Abort: context.Background()}, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("the interrupted run took %s", took)
	}
	if !out.Interrupted {
		t.Error("the outcome does not say the run was interrupted")
	}
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var pauses, heals int
	for _, e := range events {
		if e.IsNemesis() && e.F == "pause" {
			if e.Type == history.Invoke {
				pauses++
			} else {
				heals++
			}
		}
	}
	if pauses == 0 || pauses != heals {
		t.Errorf("pauses started %d, healed %d", pauses, heals)
	}
	if out.Result.Verdict != models.Unknown {
		t.Errorf("a fenced run interrupted 1.5 s into its minute: %s (%s), want unknown", out.Result.Verdict, out.Result.Explanation)
	}
}

func TestBadConfigNamesTheFlag(t *testing.T) {
	cases := map[string]func(*Config){
		"backend":    func(c *Config) { c.Backend = "consul" },
		"fencing":    func(c *Config) { c.Fencing = "some" },
		"nemesis":    func(c *Config) { c.Nemesis = []string{"clock"} },
		"clients":    func(c *Config) { c.Clients = 0 },
		"time-limit": func(c *Config) { c.TimeLimit = 0 },
		"lease-ttl":  func(c *Config) { c.LeaseTTL = time.Millisecond },
		"recipe":     func(c *Config) { c.Recipe = "redlock" },
		"op-timeout": func(c *Config) { c.OpTimeout = time.Millisecond },
	}
	for flag, mutate := range cases {
		cfg := memoryConfig(t, "none", "none")
		mutate(&cfg)
		_, err := Run(quiet(), cfg, nil)
		ue, ok := err.(*usage.Error)
		if !ok || ue.Flag != flag {
			t.Errorf("%s: got %v, want a usage error naming --%s", flag, err, flag)
		}
	}
}
