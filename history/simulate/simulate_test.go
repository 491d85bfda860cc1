package simulate_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/history/simulate"
	"github.com/fencecheck/fencecheck/models"
)

// The simulation's histories are well formed, and the checker gives the
// verdict the simulation guarantees: fenced storage is always valid, a
// holder pausing past its lease with unfenced storage breaks it.
func TestSyntheticHistoriesHaveTheExpectedVerdicts(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		fenced := simulate.Synthetic{Seed: seed, Ops: 5000, Keys: 4, Clients: 8, InfoRate: 0.01, PauseRate: 0.02, Fenced: true}.Generate()
		checkWellFormed(t, fenced)
		if r := models.Check(context.Background(), fenced, models.Options{Timeout: time.Minute}); r.Verdict != models.Valid {
			t.Fatalf("seed %d fenced: %s: %s", seed, r.Verdict, r.Explanation)
		}
		unfenced := simulate.Synthetic{Seed: seed, Ops: 5000, Keys: 4, Clients: 8, InfoRate: 0.01, PauseRate: 0.02}.Generate()
		if r := models.Check(context.Background(), unfenced, models.Options{Timeout: time.Minute}); r.Verdict != models.Invalid {
			t.Fatalf("seed %d unfenced: %s", seed, r.Verdict)
		}
	}
}

func checkWellFormed(t *testing.T, ops []history.Op) {
	t.Helper()
	if len(ops) < 4000 {
		t.Fatalf("only %d ops", len(ops))
	}
	var last int64
	for _, o := range ops {
		if o.Call < last {
			t.Fatalf("ops out of order at %+v", o)
		}
		last = o.Call
		if o.Completed() && o.Type != history.Info && o.Return < o.Call {
			t.Fatalf("op returns before its call: %+v", o)
		}
	}
}
