package harness

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/memory"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// outage is the in-process system as a whole-cluster outage leaves it:
// every client loses an answer now and then (its process is retired),
// and for the outage's span a new client refuses to open, as a client
// that cannot connect does (docs/client-protocol.md).
type outage struct {
	flakySystem
	mu           sync.Mutex
	opened       int
	from, until  time.Time
	refusedOpens int
}

var errRefused = errors.New("it refused: cannot reach the service")

func (s *outage) NewClient(ctx context.Context, slot int) (backends.Client, error) {
	s.mu.Lock()
	s.opened++
	now := time.Now()
	down := s.opened > 2 && now.After(s.from) && now.Before(s.until)
	if down {
		s.refusedOpens++
	}
	s.mu.Unlock()
	if down {
		return nil, errRefused
	}
	return s.flakySystem.NewClient(ctx, slot)
}

// A replacement process that cannot open during an outage does not end
// the workload: its acquires fail (open-failed) until the outage is over,
// then the slot goes on; the history keeps its rules and the check its
// verdict. The first open of a slot that refuses still ends the run.
func TestReplacementThatCannotOpenRetriesUntilTheServiceAnswers(t *testing.T) {
	cfg := memoryConfig(t, "all", "none")
	cfg, err := checked(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Clients = 2
	start := time.Now()
	sys := &outage{flakySystem: flakySystem{inProcess: inProcess{InProcess: memory.NewInProcess(cfg.LeaseTTL, "all")}, rng: rand.New(rand.NewPCG(3, 4))},
		from: start, until: start.Add(1200 * time.Millisecond)}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder(f)
	ctx, cancel := context.WithTimeout(context.Background(), 2500*time.Millisecond)
	defer cancel()
	next, err := (workload{cfg: &cfg, sys: sys, rec: rec, logf: t.Logf}).run(ctx)
	if err != nil {
		t.Fatalf("the workload gave up: %v", err)
	}
	if _, err := (workload{cfg: &cfg, sys: sys, rec: rec}).finalReads(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	f.Close()
	events, err := history.ParseFile(path)
	if err != nil {
		t.Fatalf("the history breaks its own rules: %v", err)
	}
	ops, _ := history.Pair(events)
	n, secs := reports.FailedOpens(ops)
	if sys.refusedOpens == 0 || n == 0 {
		t.Fatalf("no replacement refused (%d) or no failed open recorded (%d): the outage was not exercised", sys.refusedOpens, n)
	}
	var okAfter bool
	for _, o := range ops {
		if o.F == history.Acquire && o.Type == history.Fail && strings.HasPrefix(o.Error, history.OpenFailed) && !strings.Contains(o.Error, "cannot reach the service") {
			t.Errorf("a failed open without its reason: %q", o.Error)
		}
		if o.F == history.Acquire && o.Type == history.OK && o.Call > int64(1300*time.Millisecond) {
			okAfter = true
		}
	}
	if !okAfter {
		t.Errorf("no grant after the outage: the slots did not go on")
	}
	if r := models.Check(context.Background(), ops, models.Options{}); r.Verdict != models.Valid {
		t.Fatalf("%s: %s", r.Verdict, r.Explanation)
	}
	if txt := reports.FailedOpensText(ops); !strings.Contains(txt, "failed open") {
		t.Errorf("summary text %q", txt)
	}
	t.Logf("%d refused opens, %d failed opens recorded over %.1f s", sys.refusedOpens, n, secs)
}

// A slot's first client that refuses ends the run: the setup is wrong.
func TestFirstOpenRefusedEndsTheWorkload(t *testing.T) {
	cfg := memoryConfig(t, "all", "none")
	cfg, err := checked(cfg)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	sys := &outage{flakySystem: flakySystem{inProcess: inProcess{InProcess: memory.NewInProcess(cfg.LeaseTTL, "all")}, rng: rand.New(rand.NewPCG(3, 4))},
		from: start, until: start.Add(time.Hour)}
	sys.opened = 2 // the next open is refused
	rec := history.NewRecorder(nopWriter{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err = (workload{cfg: &cfg, sys: sys, rec: rec, logf: t.Logf}).run(ctx)
	if err == nil || !strings.Contains(err.Error(), "it refused") {
		t.Fatalf("a first open refused: %v, want the run to end", err)
	}
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
