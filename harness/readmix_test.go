package harness

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/models"
)

// --read-mix draws once per op from the slot's generator: about the given
// share of ops are lock-free reads, and with no mix nothing is drawn, so
// the key sequence of today's runs does not change.
func TestReadMixDrawsPerOp(t *testing.T) {
	cfg := &Config{}
	w := &worker{cfg: cfg, rng: rand.New(rand.NewPCG(1, 2))}
	ref := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 100; i++ {
		if w.lockFree() {
			t.Fatal("without --read-mix an op was drawn lock-free")
		}
	}
	if w.rng.Uint64() != ref.Uint64() {
		t.Fatal("without --read-mix the generator was drawn from: the key sequence changed")
	}
	for _, mix := range []float64{0.1, 0.5, 0.9} {
		cfg.ReadMix = mix
		const n = 20000
		free, run, longest := 0, 0, 0
		for i := 0; i < n; i++ {
			if w.lockFree() {
				free++
				run++
				longest = max(longest, run)
			} else {
				run = 0
			}
		}
		// Binomial: the standard deviation of the share is at most 0.0036
		// here; 0.02 is more than five of them.
		if got := float64(free) / n; got < mix-0.02 || got > mix+0.02 {
			t.Errorf("--read-mix %v: %d of %d ops lock-free (%.3f)", mix, free, n, got)
		}
		if longest == 0 || longest == n {
			t.Errorf("--read-mix %v: the draws do not mix (longest run of lock-free ops %d)", mix, longest)
		}
	}
}

func TestReadMixOutOfRangeNamesTheFlag(t *testing.T) {
	for _, mix := range []float64{-0.1, 1, 1.5, nanValue()} {
		cfg := memoryConfig(t, "none", "none")
		cfg.ReadMix = mix
		cfg, err := checked(cfg)
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != "read-mix" || !strings.Contains(err.Error(), "0 to below 1") {
			t.Fatalf("--read-mix %v: %v, want a usage error naming --read-mix and its range", mix, err)
		}
	}
	cfg := memoryConfig(t, "none", "none")
	cfg.ReadMix = 0.5
	cfg, err := checked(cfg)
	if err != nil {
		t.Fatalf("--read-mix 0.5: %v", err)
	}
}

func nanValue() float64 { z := 0.0; return z / z }

// A user's client is never asked for a lock-free read: the protocol does
// not require one of it, so --read-mix with --client is refused, saying why.
func TestReadMixRefusedWithAUserClient(t *testing.T) {
	cfg := Config{Backend: "redis", Cluster: "docker", Fencing: "none", Nemesis: []string{"none"}, Clients: 5, Keys: 1,
		TimeLimit: 10 * time.Second, LeaseTTL: 2 * time.Second, NemesisInterval: time.Second, CheckTimeout: time.Minute,
		Store: t.TempDir(), ClientDir: "../examples/clients/redislock", Given: map[string]bool{}, ReadMix: 0.5}
	cfg, err := checked(cfg)
	var ue *usage.Error
	if !errors.As(err, &ue) || ue.Flag != "read-mix" || !strings.Contains(err.Error(), "--client") {
		t.Fatalf("--read-mix with --client: %v, want a usage error naming --read-mix and --client", err)
	}
}

// mixCounts are what a run with --read-mix recorded: its lock-free reads
// (and how many of them were not ok), and its locked sections.
type mixCounts struct {
	lockFree, lockFreeNotOK, sections int
	ops                               []history.Op
}

func countMix(t *testing.T, dir string) mixCounts {
	t.Helper()
	events, err := history.ParseFile(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ops, _ := history.Pair(events)
	var c mixCounts
	c.ops = ops
	for _, o := range ops {
		switch {
		case o.LockFree:
			c.lockFree++
			if o.Type != history.OK {
				c.lockFreeNotOK++
			}
			if o.Token != 0 {
				t.Errorf("lock-free read at index %d carries token %d", o.InvokeIndex, o.Token)
			}
		case o.F == history.Acquire:
			c.sections++
		}
	}
	return c
}

// wantMixedRun: about half the ops were lock-free reads, every one of them
// answered even with every op fenced, and the damage found the final read
// (a lock-free reader is never taken for it) and no lost update.
func wantMixedRun(t *testing.T, out *RunResult, c mixCounts) {
	t.Helper()
	if out.Result.Verdict != models.Valid {
		t.Fatalf("verdict %s: %s (store %s)", out.Result.Verdict, out.Result.Explanation, out.Dir)
	}
	share := float64(c.lockFree) / float64(c.lockFree+c.sections)
	t.Logf("%d lock-free reads, %d locked sections (%.2f lock-free)", c.lockFree, c.sections, share)
	if c.lockFree < 20 || share < 0.3 || share > 0.7 {
		t.Errorf("%d lock-free reads beside %d sections: not the mix asked for (0.5)", c.lockFree, c.sections)
	}
	if c.lockFreeNotOK > 0 {
		t.Errorf("%d lock-free reads were not answered ok: the storage refused a read that presents no token", c.lockFreeNotOK)
	}
	d := models.ComputeDamage(c.ops)
	if d.Keys[0].Final != models.FinalOK || d.LostMin == nil || *d.LostMax != 0 {
		t.Errorf("damage: %s (final read %s)", d.Text(), d.Keys[0].Final)
	}
}

// In process: the trusting client with every op fenced and its holders
// paused past their leases; the lock-free reads go on beside it.
func TestReadMixRunInProcess(t *testing.T) {
	cfg := memoryConfig(t, "all", "pause")
	cfg.ReadMix = 0.5
	cfg.LeaseCheck = "none"
	cfg.Seed = 3
	out, err := Run(quiet(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantMixedRun(t, out, countMix(t, out.Dir))
}

func TestAcquireTimeoutOutOfRangeNamesTheFlag(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond, -time.Second, time.Hour} {
		cfg := memoryConfig(t, "none", "none")
		cfg.AcquireTimeout = d
		cfg, err := checked(cfg)
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != "acquire-timeout" {
			t.Fatalf("--acquire-timeout %s: %v, want a usage error naming --acquire-timeout", d, err)
		}
	}
}

// --acquire-timeout gives up waiting for the lock, as Jepsen's etcd client
// gives up its Lock call: with five clients queued on a lock held for up
// to half a second, a 100ms wait runs out, the acquire does not succeed
// and no read or write follows it; without the flag no acquire gives up.
func TestAcquireTimeoutGivesUpTheWait(t *testing.T) {
	giveUps := func(acquireTimeout time.Duration) (int, mixCounts) {
		cfg := memoryConfig(t, "all", "none")
		cfg.TimeLimit = 2 * time.Second
		cfg.Dwell = 500 * time.Millisecond
		cfg.AcquireTimeout = acquireTimeout
		cfg.Seed = 5
		out, err := Run(quiet(), cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if out.Result.Verdict != models.Valid {
			t.Fatalf("--acquire-timeout %s: verdict %s: %s", acquireTimeout, out.Result.Verdict, out.Result.Explanation)
		}
		c := countMix(t, out.Dir)
		n := 0
		for _, o := range c.ops {
			if o.F == history.Acquire && o.Type != history.OK {
				n++
			}
		}
		return n, c
	}
	if n, _ := giveUps(0); n != 0 {
		t.Fatalf("without --acquire-timeout %d acquires gave up", n)
	}
	n, c := giveUps(100 * time.Millisecond)
	if n == 0 {
		t.Fatal("with --acquire-timeout 100ms no acquire gave up")
	}
	// A section whose acquire gave up read and wrote nothing.
	next := map[int]bool{}
	for _, o := range c.ops {
		if o.F == history.Acquire {
			next[o.Process] = o.Type != history.OK
			continue
		}
		if next[o.Process] && (o.F == history.Read || o.F == history.Write) {
			t.Fatalf("process %d %s after its acquire gave up", o.Process, o.F)
		}
	}
}
