package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
)

// recordingFreezer remembers what is frozen now, and can refuse to thaw.
type recordingFreezer struct {
	mu       sync.Mutex
	frozen   map[string]bool
	noThaw   string
	maxFrozn int
}

func (f *recordingFreezer) Freeze(_ context.Context, t string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.frozen[t] = true
	f.maxFrozn = max(f.maxFrozn, len(f.frozen))
	return nil
}

func (f *recordingFreezer) Thaw(_ context.Context, t string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t == f.noThaw {
		return errors.New("engine said no")
	}
	delete(f.frozen, t)
	return nil
}

// pause-all freezes every server, reports them all as its targets, and
// thaws them all; one that will not thaw is tried again by the next Stop.
func TestPauseAllFreezesEveryServerTogether(t *testing.T) {
	fr := &recordingFreezer{frozen: map[string]bool{}}
	servers := []string{"n1", "n2", "n3", "n4", "n5"}
	env := &Env{Settings: Settings{Backend: "x", Docker: true, Servers: 5, Clients: 5}, Freezer: fr, ServerNodes: servers}
	fs, err := Build(context.Background(), []string{"pause-all"}, env)
	if err != nil || len(fs) != 1 {
		t.Fatalf("built %v, %v", fs, err)
	}
	p := fs[0]
	got, err := p.Start(context.Background(), rand.New(rand.NewPCG(1, 2)))
	if err != nil || !slices.Equal(got, servers) {
		t.Fatalf("start hit %v, %v; want every server %v", got, err, servers)
	}
	if fr.maxFrozn != 5 {
		t.Fatalf("%d servers frozen at once, want all 5", fr.maxFrozn)
	}
	fr.noThaw = "n3"
	if err := p.Stop(context.Background()); err == nil {
		t.Fatal("a thaw the engine refused was not reported")
	}
	if len(fr.frozen) != 1 || !fr.frozen["n3"] {
		t.Fatalf("after the first heal %v stay frozen, want n3 alone", fr.frozen)
	}
	fr.noThaw = ""
	if err := p.Stop(context.Background()); err != nil || len(fr.frozen) != 0 {
		t.Fatalf("second heal: %v, still frozen %v", err, fr.frozen)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("a heal with nothing frozen: %v", err)
	}
}
