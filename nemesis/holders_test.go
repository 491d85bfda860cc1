package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// reachFailpoint plays client process p stopped at its write failpoint:
// it waits until the process is claimed, then stops there until released.
func reachFailpoint(t *testing.T, c *Claims, p int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		if hook := c.Hook(p, 5*time.Second); hook != nil {
			go hook("write-checked")
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d was not claimed", p)
		}
		time.Sleep(time.Millisecond)
	}
}

func read(p int, key string) history.Event {
	return history.Event{Process: p, Type: history.OK, F: history.Read, Key: key}
}

// With two holders at once, each lane freezes a holder on a key of its
// own: a read on a key a lane is on claims nobody, and the key is free
// again once that lane has healed.
func TestHoldersAtOnceFreezeOneHolderPerKey(t *testing.T) {
	fr := &recordingFreezer{frozen: map[string]bool{}}
	claims := &Claims{}
	ph := &PauseHolder{Freezer: fr, TargetOf: func(p int) string { return history.SlotName(p + 1) }, Claims: claims, HoldersAtOnce: 2}
	lanes := ph.Lanes()
	if len(lanes) != 1 {
		t.Fatalf("%d further lanes, want 1", len(lanes))
	}
	l1 := lanes[0].(*PauseHolder)
	type started struct {
		targets []string
		err     error
	}
	run := func(f Fault) chan started {
		ch := make(chan started, 1)
		go func() {
			ts, err := f.Start(t.Context(), rand.New(rand.NewPCG(1, 1)))
			ch <- started{ts, err}
		}()
		return ch
	}
	s0 := run(ph)
	s1 := run(l1)
	waitArmed(ph, 2)
	ph.Observe(read(0, "k0"))
	reachFailpoint(t, claims, 0)
	ph.Observe(read(1, "k0")) // k0 is taken: nobody claimed
	if claims.Hook(1, time.Second) != nil {
		t.Fatal("a second holder on the same key was claimed")
	}
	ph.Observe(read(2, "k1"))
	reachFailpoint(t, claims, 2)
	got := map[string]bool{}
	var first string // what the first lane froze
	for i, ch := range []chan started{s0, s1} {
		select {
		case s := <-ch:
			if s.err != nil || len(s.targets) != 1 {
				t.Fatalf("start: %v, %v", s.targets, s.err)
			}
			got[s.targets[0]] = true
			if i == 0 {
				first = s.targets[0]
			}
		case <-time.After(3 * time.Second):
			t.Fatal("a lane did not freeze its holder")
		}
	}
	if !got["c1"] || !got["c3"] || fr.maxFrozn != 2 {
		t.Fatalf("froze %v (at most %d at once), want c1 and c3 together", got, fr.maxFrozn)
	}
	other, freed, kept := "c3", "k0", "k1"
	if first == "c3" {
		other, freed, kept = "c1", "k1", "k0"
	}
	if err := ph.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if fr.frozen[first] || !fr.frozen[other] {
		t.Fatalf("after the first lane's heal: frozen %v, want %s only", fr.frozen, other)
	}
	s0 = run(ph)
	waitArmed(ph, 1)
	ph.Observe(read(4, kept))  // still the second lane's
	ph.Observe(read(3, freed)) // free again
	reachFailpoint(t, claims, 3)
	if s := <-s0; s.err != nil || len(s.targets) != 1 || s.targets[0] != "c4" {
		t.Fatalf("after its heal the first lane froze %v, %v; want c4 on %s", s.targets, s.err, freed)
	}
	if err := HealAll([]Fault{ph}); err != nil || len(fr.frozen) != 0 {
		t.Fatalf("HealAll: %v, still frozen %v", err, fr.frozen)
	}
}

// One holder at a time (the default) has no further lanes.
func TestOneHolderAtOnceHasNoLanes(t *testing.T) {
	for _, n := range []int{0, 1} {
		ph := &PauseHolder{Freezer: &recordingFreezer{frozen: map[string]bool{}}, Claims: &Claims{}, HoldersAtOnce: n}
		if l := ph.Lanes(); l != nil {
			t.Errorf("HoldersAtOnce %d: %d lanes", n, len(l))
		}
	}
}

// --pause-until granted ends a freeze at the successor's read on the
// frozen holder's key, plus the margin; reads on other keys and the
// holder's own do not end it, and without a successor it lasts max.
func TestPauseUntilGrantedEndsAtTheSuccessorsRead(t *testing.T) {
	var w successorWait
	w.watch("k0", 1)
	done := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		w.wait(t.Context(), 5*time.Second)
		done <- time.Since(start)
	}()
	time.Sleep(20 * time.Millisecond)
	w.Observe(read(1, "k0"))
	w.Observe(read(2, "k1"))
	w.Observe(history.Event{Process: 2, Type: history.OK, F: history.Acquire, Key: "k0"})
	select {
	case <-done:
		t.Fatal("the freeze ended before the successor read")
	case <-time.After(50 * time.Millisecond):
	}
	at := time.Now()
	w.Observe(read(2, "k0"))
	select {
	case d := <-done:
		if after := time.Since(at); after < GrantedMargin-5*time.Millisecond || d > 2*time.Second {
			t.Fatalf("ended %s after the successor's read (want about %s)", after, GrantedMargin)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the freeze did not end at the successor's read")
	}
	w.clear()
	start := time.Now()
	w.watch("k3", 0)
	w.wait(context.Background(), 80*time.Millisecond)
	if d := time.Since(start); d < 80*time.Millisecond || d > time.Second {
		t.Fatalf("with no successor the freeze lasted %s, want its max 80ms", d)
	}
}

// --holders-at-once is a number from 1 to --keys, and says so.
func TestHoldersAtOnceChecked(t *testing.T) {
	for _, c := range []struct {
		v    string
		keys int
		ok   bool
	}{{"", 1, true}, {"1", 1, true}, {"5", 5, true}, {"3", 5, true}, {"0", 5, false}, {"-2", 5, false}, {"6", 5, false}, {"two", 5, false}} {
		err := Check("pause-holder", Settings{Keys: c.keys, Options: map[string]string{holdersAtOnceFlag.Name: c.v}})
		if (err == nil) != c.ok {
			t.Errorf("--holders-at-once %q with %d keys: %v", c.v, c.keys, err)
		}
		var ue *usage.Error
		if err != nil && (!errors.As(err, &ue) || ue.Flag != "holders-at-once" || !strings.Contains(err.Error(), "keys")) {
			t.Errorf("--holders-at-once %q: %v, want a usage error naming the flag and --keys", c.v, err)
		}
	}
	if err := CheckFlags([]string{"pause-holder"}, map[string]string{pauseUntilFlag.Name: "later"}); err == nil {
		t.Error("--pause-until later accepted")
	}
	if err := CheckFlags([]string{"pause"}, map[string]string{holdersAtOnceFlag.Name: "2"}); err == nil {
		t.Error("--holders-at-once accepted without pause-holder")
	}
}

// laneFault is a fault that counts its starts, with further lanes.
type laneFault struct {
	name   string
	starts chan string
	more   []Fault
}

func (f *laneFault) Name() string { return "lf" }
func (f *laneFault) Start(ctx context.Context, _ *rand.Rand) ([]string, error) {
	select {
	case f.starts <- f.name:
	default:
	}
	return []string{f.name}, nil
}
func (f *laneFault) Stop(context.Context) error { return nil }
func (f *laneFault) Lanes() []Fault             { return f.more }

type eventLog struct {
	mu  chan struct{}
	evs []history.Event
}

func (l *eventLog) Record(e history.Event) history.Event {
	l.mu <- struct{}{}
	l.evs = append(l.evs, e)
	<-l.mu
	return e
}

// The schedule runs a Laned fault's further lanes beside the first, so
// their intervals overlap, and Pair closes each on its own nodes.
func TestScheduleRunsLanesBeside(t *testing.T) {
	starts := make(chan string, 100)
	l1 := &laneFault{name: "b", starts: starts}
	f := &laneFault{name: "a", starts: starts, more: []Fault{l1}}
	rec := &eventLog{mu: make(chan struct{}, 1)}
	s := &Schedule{Faults: []Fault{f}, Interval: 30 * time.Millisecond, Rng: rand.New(rand.NewPCG(1, 2)), Rec: rec,
		FaultDuration: func(Fault) time.Duration { return 100 * time.Millisecond }}
	ctx, cancel := context.WithTimeout(t.Context(), 400*time.Millisecond)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var evs []history.Event
	for i, e := range rec.evs {
		e.Index, e.Time = int64(i), int64(i+1)
		evs = append(evs, e)
	}
	_, faults := history.Pair(evs)
	seen := map[string]int{}
	overlap := false
	for i, a := range faults {
		seen[a.Nodes[0]]++
		for _, b := range faults[i+1:] {
			if a.Nodes[0] != b.Nodes[0] && a.Start < b.End && b.Start < a.End {
				overlap = true
			}
		}
	}
	if seen["a"] == 0 || seen["b"] == 0 || !overlap {
		t.Fatalf("intervals %+v: want both lanes, overlapping", faults)
	}
}

// waitArmed waits until n lanes of ph's group wait for a holder to claim.
func waitArmed(ph *PauseHolder, n int) {
	for {
		ph.group.mu.Lock()
		armed := len(ph.group.armed)
		ph.group.mu.Unlock()
		if armed == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// announcingFault announces its start, then acts: a client event
// recorded while it acts stands for a grant the act would lose.
type announcingFault struct {
	rec  Recorder
	fail bool
}

func (f *announcingFault) Name() string { return "announcing" }
func (f *announcingFault) Start(ctx context.Context, rng *rand.Rand) ([]string, error) {
	return f.StartAnnounced(ctx, rng, func([]string) {})
}
func (f *announcingFault) StartAnnounced(_ context.Context, _ *rand.Rand, announce func([]string)) ([]string, error) {
	announce([]string{"n1"})
	f.rec.Record(history.Event{Process: 0, Type: history.OK, F: history.Acquire})
	if f.fail {
		return nil, errors.New("the act failed")
	}
	return []string{"n1"}, nil
}
func (f *announcingFault) Stop(context.Context) error { return nil }

// An Announcer's invoke is recorded when it announces, before its act,
// once; a failed act closes the interval it opened.
func TestScheduleRecordsAnAnnouncedStartBeforeTheAct(t *testing.T) {
	for _, fail := range []bool{false, true} {
		rec := &eventLog{mu: make(chan struct{}, 1)}
		s := &Schedule{Faults: []Fault{&announcingFault{rec: rec, fail: fail}}, Interval: 50 * time.Millisecond, Rng: rand.New(rand.NewPCG(1, 2)), Rec: rec,
			FaultDuration: func(Fault) time.Duration { return 20 * time.Millisecond }}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		s.Run(ctx)
		cancel()
		var kinds []string
		for _, e := range rec.evs[:min(3, len(rec.evs))] {
			k := string(e.Type)
			if e.IsNemesis() {
				k = "nemesis " + k
			}
			kinds = append(kinds, k)
		}
		want := []string{"nemesis invoke", "ok", "nemesis info"}
		if !slices.Equal(kinds, want) {
			t.Errorf("fail=%v: the first events are %v, want %v", fail, kinds, want)
		}
		if fail && rec.evs[2].Error == "" {
			t.Errorf("the failed act's info says nothing: %+v", rec.evs[2])
		}
	}
}
