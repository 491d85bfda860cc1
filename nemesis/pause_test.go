package nemesis

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
)

// pause freezes one target drawn from what Targets lists, does nothing
// when it lists none, and keeps a target that would not thaw for the next
// Stop.
func TestPauseKeepsWhatWouldNotThaw(t *testing.T) {
	ctx := context.Background()
	fr := &recordingFreezer{frozen: map[string]bool{}}
	var targets []string
	p := &Pause{Label: "pause", Freezer: fr, Targets: func(context.Context) ([]string, error) { return targets, nil }}
	rng := rand.New(rand.NewPCG(1, 2))
	if got, err := p.Start(ctx, rng); got != nil || err != nil || len(fr.frozen) != 0 {
		t.Fatalf("with no target: hit %v, %v, frozen %v; want nothing", got, err, fr.frozen)
	}
	targets = []string{"c1", "c2", "c3"}
	got, err := p.Start(ctx, rng)
	if err != nil || len(got) != 1 || !slices.Contains(targets, got[0]) || !fr.frozen[got[0]] {
		t.Fatalf("start hit %v, %v, frozen %v; want one of %v frozen", got, err, fr.frozen, targets)
	}
	fr.noThaw = got[0]
	if err := p.Stop(ctx); err == nil || !fr.frozen[got[0]] {
		t.Fatalf("a refused thaw: %v, frozen %v; want an error and %s still frozen", err, fr.frozen, got[0])
	}
	fr.noThaw = ""
	if err := p.Stop(ctx); err != nil || len(fr.frozen) != 0 {
		t.Fatalf("second heal: %v, still frozen %v", err, fr.frozen)
	}
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("a heal with nothing frozen: %v", err)
	}
}
