package harness

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// --hold adds a uniform random time in [0, hold] to --work; without it
// the section takes --work exactly and draws nothing from the generator.
func TestSectionWorkHold(t *testing.T) {
	cfg := &Config{Work: 10 * time.Millisecond}
	w := &worker{cfg: cfg, rng: rand.New(rand.NewPCG(1, 2))}
	ref := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 10; i++ {
		if d := w.sectionWork(); d != cfg.Work {
			t.Fatalf("without --hold: %s, want %s", d, cfg.Work)
		}
	}
	if w.rng.Uint64() != ref.Uint64() {
		t.Fatal("without --hold the generator was drawn from: the key sequence changed")
	}
	cfg.Dwell = 100 * time.Millisecond
	lo, hi := time.Hour, time.Duration(0)
	var sum time.Duration
	const n = 2000
	for i := 0; i < n; i++ {
		d := w.sectionWork()
		if d < cfg.Work || d > cfg.Work+cfg.Dwell {
			t.Fatalf("with --hold %s: %s is outside [%s, %s]", cfg.Dwell, d, cfg.Work, cfg.Work+cfg.Dwell)
		}
		lo, hi, sum = min(lo, d), max(hi, d), sum+d
	}
	mean := sum / n
	if lo > cfg.Work+5*time.Millisecond || hi < cfg.Work+95*time.Millisecond || mean < 55*time.Millisecond || mean > 65*time.Millisecond {
		t.Fatalf("with --hold %s over %d sections: min %s, max %s, mean %s; want spread over [10ms, 110ms], mean near 60ms", cfg.Dwell, n, lo, hi, mean)
	}
}

func TestHoldOutOfRangeNamesTheFlag(t *testing.T) {
	for _, h := range []time.Duration{-time.Millisecond, 2 * time.Minute} {
		cfg := memoryConfig(t, "none", "none")
		cfg.Dwell = h
		cfg, err := checked(cfg)
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != "hold" {
			t.Fatalf("--hold %s: %v, want a usage error naming --hold", h, err)
		}
	}
}

// A run with --hold spends a random time between each read and its write:
// the recorded gaps spread over [work, work + hold].
func TestHoldSpreadsTheCriticalSection(t *testing.T) {
	cfg := memoryConfig(t, "all", "none")
	cfg.TimeLimit = 2 * time.Second
	cfg.Dwell = 60 * time.Millisecond
	cfg.Seed = 7
	out, err := Run(quiet(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ops, _ := history.Pair(events)
	readDone := map[int]int64{}
	var gaps []time.Duration
	for _, o := range ops {
		switch {
		case o.F == history.Read && o.Type == history.OK:
			readDone[o.Process] = o.Done
		case o.F == history.Write:
			if d, ok := readDone[o.Process]; ok {
				gaps = append(gaps, time.Duration(o.Call-d))
			}
		}
	}
	if len(gaps) < 10 {
		t.Fatalf("only %d sections in 2 s", len(gaps))
	}
	short, long := 0, 0
	for _, g := range gaps {
		if g < cfg.Work {
			t.Fatalf("a section wrote %s after its read, before --work %s was over", g, cfg.Work)
		}
		if g < cfg.Work+20*time.Millisecond {
			short++
		}
		if g > cfg.Work+40*time.Millisecond {
			long++
		}
	}
	if short == 0 || long == 0 {
		t.Fatalf("%d sections: %d short, %d long gaps between read and write; --hold should spread them", len(gaps), short, long)
	}
	if out.Result.Verdict != "valid" {
		t.Fatalf("verdict %s with fencing all and no faults", out.Result.Verdict)
	}
}
