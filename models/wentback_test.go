package models

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
)

// The redis-py run of issue 55 in small, on the Sentinel topology with
// --fencing all: the clients held the lock on the old master, whose
// counter had reached 448, each releasing in turn; after the failover
// they took it on the promoted replica, whose counter was at 35. Nobody
// was superseded (two holders at once never), yet the storage, having
// seen 448, refused every op of tokens 35, 36 and 37. Those refusals are
// the fence at work against the service's lost counter: counted apart,
// not as exposures, so the bound is not taken over them.
func TestRefusalsOfTokensThatWentBackAreNoExposures(t *testing.T) {
	b := newBuilder()
	b.section(1, 447, 1)
	b.section(2, 448, 2)
	for i, tok := range []uint64{35, 36, 37} {
		p := 3 + i
		b.acquire(p, tok)
		b.invoke(p, history.Read, tok, nil, nil)
		b.complete(p, history.Fail, 0, nil, lockclient.ErrorFenced)
		b.release(p)
	}
	x := b.exposures(t)
	wantCounts(t, x.ExposureCounts, ExposureCounts{RefusedWentBack: 3})
	if x.BoundText() != "" {
		t.Errorf("a bound was taken over refusals of tokens that went back: %s", x.BoundText())
	}
	if got := x.Text(); !strings.Contains(got, "the storage refused 3 holders whose token the service had handed out below one it had already granted") {
		t.Errorf("text %q", got)
	}
	ops, _ := history.Pair(b.events)
	if c := CountContradictions(ops, nil); c.WentDown != 3 {
		t.Errorf("contradicted grants %+v, want the 3 that went down", c.ContradictionCounts)
	}
}

// A holder whose token went down and that a newer grant then superseded
// is an exposure as before: its refusal is a superseded holder's late op.
// And a paused holder's late write refused by the fence stays one.
func TestSupersededHolderStaysAnExposure(t *testing.T) {
	b := newBuilder()
	b.section(1, 448, 1)
	b.acquire(2, 35) // went back
	b.acquire(3, 36) // supersedes 35 while it holds
	b.read(3, 36, 1)
	b.invoke(2, history.Write, 35, history.Int64(1), history.Int64(2))
	b.complete(2, history.Fail, 0, nil, lockclient.ErrorFenced)
	b.release(2)
	b.release(3)
	wantCounts(t, b.exposures(t).ExposureCounts, ExposureCounts{Exposures: 1, Refused: 1})

	p := staleHistory() // the paused holder, no token going down
	wantCounts(t, p.exposures(t).ExposureCounts, ExposureCounts{Exposures: 1, Admitted: 1})
}
