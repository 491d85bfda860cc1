package harness

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/memory"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/nemesis"
)

// flakySystem is the in-process system whose clients, now and then, lose
// the answer to an op that did take effect (a crashed or hung agent): the
// outcome is unknown to the harness.
type flakySystem struct {
	inProcess
	mu  sync.Mutex
	rng *rand.Rand
}

type flakyClient struct {
	backends.Client
	sys *flakySystem
}

var errLostAnswer = errors.New("agent gone: the answer was lost")

func (c flakyClient) lose() bool {
	c.sys.mu.Lock()
	defer c.sys.mu.Unlock()
	return c.sys.rng.IntN(40) == 0
}

func (c flakyClient) Write(ctx context.Context, key string, token uint64, prev, value int64) error {
	err := c.Client.Write(ctx, key, token, prev, value)
	if err == nil && c.lose() {
		return errLostAnswer // it happened, but nobody heard
	}
	return err
}

func (c flakyClient) Read(ctx context.Context, key string, token uint64) (int64, error) {
	v, err := c.Client.Read(ctx, key, token)
	if err == nil && c.lose() {
		return 0, errLostAnswer
	}
	return v, err
}

func (s *flakySystem) NewClient(ctx context.Context, slot int) (backends.Client, error) {
	c, err := s.inProcess.NewClient(ctx, slot)
	return flakyClient{c, s}, err
}

func (s *flakySystem) Freezer() nemesis.Freezer { return s.InProcess }

// Clients whose answers get lost: each such op is recorded as info, the
// process is retired and its slot goes on as a new process with a new
// client; the run completes and the check still proves it valid.
func TestLostAnswersRetireTheProcessAndTheRunGoesOn(t *testing.T) {
	cfg := memoryConfig(t, "all", "none")
	cfg, err := checked(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sys := &flakySystem{inProcess: inProcess{InProcess: memory.NewInProcess(cfg.LeaseTTL, "all")}, rng: rand.New(rand.NewPCG(1, 2))}
	dir := t.TempDir()
	path := filepath.Join(dir, "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder(f)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	next, err := (workload{cfg: &cfg, sys: sys, rec: rec, logf: t.Logf}).run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := (workload{cfg: &cfg, sys: sys, rec: rec}).finalReads(context.Background(), next); err != nil || n != cfg.Keys {
		t.Fatalf("final reads of %d of %d keys: %v", n, cfg.Keys, err)
	}
	f.Close()
	events, err := history.ParseFile(path)
	if err != nil {
		t.Fatalf("the history breaks its own rules: %v", err)
	}
	ops, _ := history.Pair(events)
	infos, procs := 0, map[int]bool{}
	for _, o := range ops {
		procs[o.Process] = true
		if o.Type == history.Info {
			infos++
		}
	}
	if infos == 0 || len(procs) <= cfg.Clients {
		t.Fatalf("infos %d, processes %d: nothing was retired", infos, len(procs))
	}
	r := models.Check(context.Background(), ops, models.Options{})
	if r.Verdict != models.Valid {
		t.Fatalf("%s: %s", r.Verdict, r.Explanation)
	}
	t.Logf("%d ops, %d unknown outcomes, %d processes", len(ops), infos, len(procs))
}

// lostReads is the in-process system whose clients lose every read's
// answer: a final read that ends in info.
type lostReads struct{ inProcess }

type lostReadClient struct{ backends.Client }

func (c lostReadClient) Read(ctx context.Context, key string, token uint64) (int64, error) {
	c.Client.Read(ctx, key, token)
	return 0, errLostAnswer
}

func (s lostReads) NewClient(ctx context.Context, slot int) (backends.Client, error) {
	c, err := s.inProcess.NewClient(ctx, slot)
	return lostReadClient{c}, err
}

// A final read whose answer is lost retires its process: the release that
// followed it on the same process made the history break its own rules
// ("process N invokes after its op ended in info"), found with a crashing
// custom client.
func TestFinalReadLostRetiresItsProcess(t *testing.T) {
	cfg := memoryConfig(t, "all", "none")
	cfg, err := checked(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sys := lostReads{inProcess{InProcess: memory.NewInProcess(cfg.LeaseTTL, "all")}}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder(f)
	if _, err := (workload{cfg: &cfg, sys: sys, rec: rec}).finalReads(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	events, err := history.ParseFile(path)
	if err != nil {
		t.Fatalf("the history breaks its own rules: %v", err)
	}
	ops, _ := history.Pair(events)
	if len(ops) != 2 || ops[0].F != history.Acquire || ops[1].F != history.Read || ops[1].Type != history.Info {
		t.Fatalf("want an ok acquire and an unknown read, and no release: %+v", ops)
	}
}

// slowStart is the in-process system whose last slot's client takes until
// the workload ends to start (five JVMs starting at once).
type slowStart struct {
	inProcess
	slots int
}

func (s slowStart) NewClient(ctx context.Context, slot int) (backends.Client, error) {
	if slot == s.slots {
		<-ctx.Done()
		return nil, errors.New("it never answered ready (context canceled)")
	}
	return s.inProcess.NewClient(ctx, slot)
}

// A workload that ends (its first violation, the time limit) while a
// client is still starting is not a failed run: the clients that ran
// recorded their ops, and no error is returned.
func TestWorkloadEndingWhileAClientStartsIsNoError(t *testing.T) {
	cfg := memoryConfig(t, "all", "none")
	cfg, err := checked(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sys := slowStart{inProcess{InProcess: memory.NewInProcess(cfg.LeaseTTL, "all")}, cfg.Clients}
	rec := history.NewRecorder(io.Discard)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := (workload{cfg: &cfg, sys: sys, rec: rec, logf: t.Logf}).run(ctx); err != nil {
		t.Fatalf("the run failed: %v", err)
	}
}

// ownStorage is the in-process system as if its client wrote a storage of
// its own: the final reads take the value from finalReader, not from the
// client.
type ownStorage struct {
	inProcess
	value int64
}

func (s ownStorage) finalReader() func(context.Context, string) (int64, error) {
	return func(context.Context, string) (int64, error) { return s.value, nil }
}

// With a storage the client fences itself, the final read's value is
// fencecheck's own reading of that storage; the lock around it is still
// the client's.
func TestFinalReadOfAClientsOwnStorage(t *testing.T) {
	cfg := memoryConfig(t, "all", "none")
	cfg, err := checked(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sys := ownStorage{inProcess{InProcess: memory.NewInProcess(cfg.LeaseTTL, "all")}, 42}
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder(f)
	if _, err := (workload{cfg: &cfg, sys: sys, rec: rec}).finalReads(context.Background(), 10); err != nil {
		t.Fatal(err)
	}
	f.Close()
	events, err := history.ParseFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ops, _ := history.Pair(events)
	if len(ops) != 3 || ops[0].F != history.Acquire || ops[0].Type != history.OK || ops[1].F != history.Read ||
		ops[1].Value == nil || *ops[1].Value != 42 || ops[2].F != history.Release {
		t.Fatalf("want acquire, a read of 42 (fencecheck's own), release: %+v", ops)
	}
}
