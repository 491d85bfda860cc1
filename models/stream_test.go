package models

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history/simulate"
	"github.com/fencecheck/fencecheck/internal/bound"
	"github.com/fencecheck/fencecheck/internal/units"
	"github.com/fencecheck/fencecheck/lockclient"

	"github.com/fencecheck/fencecheck/history"
)

// randomEvents makes a small random history from the simulation, some of
// it broken on purpose so that invalid ones come in every shape: a read
// that saw another value, a write over the wrong value, a token lowered
// or granted again, a fenced refusal turned into an acceptance.
func randomEvents(seed uint64) []history.Event {
	rng := rand.New(rand.NewPCG(seed, 99))
	s := simulate.Synthetic{Seed: seed, Ops: 40 + rng.IntN(160), Keys: 1 + rng.IntN(3), Clients: 2 + rng.IntN(7),
		InfoRate: []float64{0, 0.02, 0.1, 0.25}[rng.IntN(4)], PauseRate: []float64{0, 0.05, 0.2}[rng.IntN(3)],
		Fenced: rng.IntN(2) == 0, NoTokens: rng.IntN(6) == 0}
	if s.NoTokens {
		s.PauseRate = 0
	}
	var events []history.Event
	s.Events(func(e history.Event) error { events = append(events, e); return nil })
	for m := rng.IntN(3); m > 0; m-- {
		i := rng.IntN(len(events))
		e := &events[i]
		if e.Type == history.Invoke {
			continue
		}
		switch {
		case e.F == history.Read && e.Type == history.OK && e.Value != nil:
			v := *e.Value + int64(rng.IntN(3)) - 1
			e.Value = &v
		case e.F == history.Write && e.Prev != nil:
			v := *e.Prev + 1
			e.Prev = &v
		case e.F == history.Acquire && e.Type == history.OK && e.Token > 1:
			e.Token -= uint64(1 + rng.IntN(2))
		case e.Type == history.Fail && e.Error == lockclient.ErrorFenced:
			e.Type, e.Error = history.OK, ""
		}
	}
	return events
}

// The streaming checker and the whole-key search agree on thousands of
// small random histories, valid and invalid, with and without tokens; and
// the check read from a file agrees with the check of the paired ops.
func TestStreamingAgreesWithTheWholeSearch(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 500
	}
	kinds := map[Verdict]int{}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		events := randomEvents(seed)
		ops, _ := history.Pair(events)
		whole := CheckWhole(context.Background(), ops, Options{})
		streamed := Check(context.Background(), ops, Options{})
		if whole.Verdict != streamed.Verdict {
			t.Fatalf("seed %d: whole search %s, streaming %s (%s / %s)", seed, whole.Verdict, streamed.Verdict, whole.Explanation, streamed.Explanation)
		}
		for i := range whole.Keys {
			if whole.Keys[i].Key != streamed.Keys[i].Key || whole.Keys[i].Verdict != streamed.Keys[i].Verdict {
				t.Fatalf("seed %d: key %s: whole %s, streaming %s", seed, whole.Keys[i].Key, whole.Keys[i].Verdict, streamed.Keys[i].Verdict)
			}
		}
		var buf bytes.Buffer
		for _, e := range events {
			b, _ := json.Marshal(e)
			buf.Write(append(b, '\n'))
		}
		read, _, err := CheckReader(context.Background(), &buf, Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if read.Verdict != streamed.Verdict || read.Explanation != streamed.Explanation {
			t.Fatalf("seed %d: read from a file %s (%s), from ops %s (%s)", seed, read.Verdict, read.Explanation, streamed.Verdict, streamed.Explanation)
		}
		kinds[whole.Verdict]++
	}
	if kinds[Valid] < n/10 || kinds[Invalid] < n/10 {
		t.Fatalf("the histories were not varied enough: %v", kinds)
	}
	t.Logf("verdicts: %v", kinds)
}

// The grants decided as a stream agree with checkGrants (itself checked
// against porcupine) on random grants.
func TestStreamingGrantsAgreeWithCheckGrants(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	kinds := map[bool]int{}
	for round := 0; round < 5000; round++ {
		n := 1 + rng.IntN(8)
		var grants []*history.Op
		k := newKeyCheck("k0", 0)
		for i := 0; i < n; i++ {
			call := rng.Int64N(100)
			o := &history.Op{Process: i, F: history.Acquire, Key: "k0", Type: history.OK,
				Token: uint64(1 + rng.IntN(n+1)), Call: call, Return: call + rng.Int64N(30)}
			grants = append(grants, o)
			k.add(o)
		}
		k.finish()
		_, _, bad := checkGrants(grants)
		if bad != k.grantBad {
			t.Fatalf("round %d: checkGrants bad=%v, streaming bad=%v (%s), grants %+v", round, bad, k.grantBad, k.grantMsg, deref(grants))
		}
		kinds[bad]++
	}
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Fatalf("not varied: %v", kinds)
	}
}

// A long one-key history is checked in memory that does not grow with it,
// and an invalid one keeps porcupine's visualization of the window that
// holds the violation, not of the whole key.
func TestStreamingKeepsTheFailingWindowOnly(t *testing.T) {
	ops := simulate.Synthetic{Seed: 3, Ops: 30000, Keys: 1, Clients: 5, PauseRate: 0.01}.Generate()
	r := Check(context.Background(), ops, Options{VisualizeMaxOps: 200})
	if r.Verdict != Invalid {
		t.Fatalf("verdict %s, want invalid", r.Verdict)
	}
	k := r.Keys[0]
	if !k.CanVisualize() || len(k.Culprits) == 0 {
		t.Fatalf("no visualization or culprits kept: %+v", k)
	}
	if n := len(k.info.PartialLinearizationsOperations()[0]); n == 0 {
		t.Fatalf("the window has no partial linearization")
	}
	var html bytes.Buffer
	if err := k.Visualize(&html, nil); err != nil {
		t.Fatal(err)
	}
	if html.Len() == 0 || html.Len() > 2<<20 {
		t.Fatalf("visualization of %d bytes", html.Len())
	}
}

// eventSource writes a synthetic history of n ops as JSON Lines into a
// pipe, without holding it.
func eventSource(s simulate.Synthetic) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		err := s.Events(func(e history.Event) error {
			b, err := json.Marshal(e)
			if err != nil {
				return err
			}
			_, err = pw.Write(append(b, '\n'))
			return err
		})
		pw.CloseWithError(err)
	}()
	return pr
}

func TestCheckTimeoutSaysSoAndHowToRaiseIt(t *testing.T) {
	src := eventSource(simulate.Synthetic{Seed: 1, Ops: 5_000_000, Keys: 1, Clients: 5, Fenced: true})
	defer src.Close()
	start := time.Now()
	r, _, err := CheckReader(context.Background(), src, Options{Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Unknown || !strings.Contains(r.Explanation, "the check timed out after 300ms (--check-timeout); raise it with --check-timeout 30m") {
		t.Fatalf("%s: %s", r.Verdict, r.Explanation)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the check ended %s after it started, with a 300ms timeout", d)
	}
}

func TestCheckMemoryBoundEndsTheCheckUnknown(t *testing.T) {
	ops := simulate.Synthetic{Seed: 1, Ops: 2000, Keys: 1, Clients: 5, Fenced: true}.Generate()
	runtime.GC()
	limit := bound.HeapBytes() / 2 // already past it
	for _, check := range []func(context.Context, []history.Op, Options) Result{Check, CheckWhole} {
		r := check(context.Background(), ops, Options{MemoryLimit: limit})
		if r.Verdict != Unknown || !strings.Contains(r.Explanation, "the check stopped at its memory bound of") ||
			!strings.Contains(r.Explanation, "(--check-memory); raise it with --check-memory") {
			t.Fatalf("%s: %s", r.Verdict, r.Explanation)
		}
	}
	// The bound is given back: the process's limit is what it was.
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Fatalf("memory limit left at %d", l)
	}
}

// The whole-key search grows with the square of a key's ops: a bound
// above what the process holds is reached during the search, and the
// search stops there instead of taking the machine.
func TestCheckMemoryBoundStopsTheWholeSearch(t *testing.T) {
	ops := simulate.Synthetic{Seed: 1, Ops: 60000, Keys: 1, Clients: 5, Fenced: true}.Generate()
	runtime.GC()
	limit := bound.HeapBytes() + 64<<20
	r := CheckWhole(context.Background(), ops, Options{MemoryLimit: limit, VisualizeMaxOps: 1})
	if r.Verdict != Unknown || !strings.Contains(r.Explanation, "memory bound of "+units.FormatBytes(limit)) {
		t.Fatalf("%s: %s", r.Verdict, r.Explanation)
	}
	// The streaming check of the same history stays under it.
	if r := Check(context.Background(), ops, Options{MemoryLimit: limit, VisualizeMaxOps: 1}); r.Verdict != Valid {
		t.Fatalf("streaming: %s: %s", r.Verdict, r.Explanation)
	}
}

// A cancelled check (SIGINT) ends promptly, unknown, and leaves nothing
// running: porcupine's search included.
func TestCancelledCheckEndsPromptlyAndLeavesNothingRunning(t *testing.T) {
	before := runtime.NumGoroutine()
	src := eventSource(simulate.Synthetic{Seed: 2, Ops: 5_000_000, Keys: 1, Clients: 20, InfoRate: 0.02, Fenced: true})
	defer src.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancelledAt := make(chan time.Time, 1)
	time.AfterFunc(300*time.Millisecond, func() { cancelledAt <- time.Now(); cancel() })
	r, _, err := CheckReader(ctx, src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != Unknown || !strings.Contains(r.Explanation, "the check was interrupted") {
		t.Fatalf("%s: %s", r.Verdict, r.Explanation)
	}
	// A bound on the behaviour, not a speed goal: the whole check of these
	// 5 M events takes over a minute on a loaded 2-core machine (500 k
	// took 8 s at load 20), so 10 s after the cancel still tells a check
	// that stops from one that runs on, with room for that load.
	if d := time.Since(<-cancelledAt); d > 10*time.Second {
		t.Fatalf("took %s after the cancel", d)
	}

	// The whole-key search, cancelled while it runs, returns only when
	// porcupine has stopped. A fast machine may finish the search before
	// the cancel comes: that is no fault, and the goroutines are counted
	// all the same. (That the search stops on its context at all is
	// TestCheckMemoryBoundStopsTheWholeSearch's, which does not race.)
	ops := simulate.Synthetic{Seed: 1, Ops: 60000, Keys: 1, Clients: 5, Fenced: true}.Generate()
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(30*time.Millisecond, cancel)
	start := time.Now()
	r = CheckWhole(ctx, ops, Options{VisualizeMaxOps: 1})
	switch {
	case r.Verdict == Unknown && strings.Contains(r.Explanation, "interrupted"):
		t.Logf("whole search interrupted after %s", time.Since(start).Round(time.Millisecond))
	case r.Verdict == Valid:
		t.Logf("whole search finished in %s, before the cancel", time.Since(start).Round(time.Millisecond))
	default:
		t.Fatalf("whole search: %s (%s) after %s", r.Verdict, r.Explanation, time.Since(start))
	}
	src.Close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines left running, %d before", n, before)
	}
}

// A violation is heard of while the history is still being read.
func TestViolationIsHeardAsItHappens(t *testing.T) {
	var first *KeyResult
	var events int64
	s := simulate.Synthetic{Seed: 3, Ops: 30000, Keys: 1, Clients: 5, PauseRate: 0.01}
	st := NewStream(context.Background(), Options{OnViolation: func(k KeyResult) {
		if first == nil {
			first = &k
		}
	}})
	var heardAt int64 = -1
	s.Events(func(e history.Event) error {
		events++
		if err := st.Add(e); err != nil {
			return err
		}
		if first != nil && heardAt < 0 {
			heardAt = events
		}
		return nil
	})
	r := st.Finish()
	if r.Verdict != Invalid || first == nil || first.Verdict != Invalid || first.Explanation != r.Keys[0].Explanation {
		t.Fatalf("final %s (%s), heard %+v", r.Verdict, r.Explanation, first)
	}
	if heardAt < 0 || heardAt >= events {
		t.Fatalf("heard of the violation after %d of %d events", heardAt, events)
	}
	t.Logf("heard of the violation after %d of %d events", heardAt, events)
}
