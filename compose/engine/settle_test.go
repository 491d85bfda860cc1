package engine

import (
	"context"
	"errors"
	"testing"
	"time"
)

var fastSettle = settleRules{Quiet: 30 * time.Millisecond, Every: 5 * time.Millisecond, Limit: time.Second}

// A pause that lands after the heal's unpause (the daemon ran a timed-out
// request late) is found and undone, and the node is then watched until
// it has stayed running for the quiet time.
func TestSettleUnpausedUndoesALatePause(t *testing.T) {
	frozen, looks, unpauses := false, 0, 0
	var lastThaw time.Time
	paused := func() (bool, error) {
		looks++
		if looks == 3 { // the late pause lands between two looks
			frozen = true
		}
		return frozen, nil
	}
	unpause := func() error { unpauses++; frozen = false; lastThaw = time.Now(); return nil }
	if err := settleUnpaused(context.Background(), fastSettle, paused, unpause); err != nil {
		t.Fatal(err)
	}
	if unpauses != 1 || frozen {
		t.Fatalf("late pause: %d unpauses, frozen %v; want 1 and running", unpauses, frozen)
	}
	if since := time.Since(lastThaw); since < fastSettle.Quiet {
		t.Errorf("returned %s after the second unpause, before the quiet time %s", since, fastSettle.Quiet)
	}
}

// A node that keeps being frozen is an error, not a silent success.
func TestSettleUnpausedGivesUpOnANodeThatStaysFrozen(t *testing.T) {
	err := settleUnpaused(context.Background(), fastSettle, func() (bool, error) { return true, nil }, func() error { return nil })
	if err == nil {
		t.Fatal("a node found frozen at every look was reported settled")
	}
}

// A failed look or unpause ends the watch with that error.
func TestSettleUnpausedPassesOnErrors(t *testing.T) {
	boom := errors.New("daemon gone")
	if err := settleUnpaused(context.Background(), fastSettle, func() (bool, error) { return false, boom }, func() error { return nil }); !errors.Is(err, boom) {
		t.Errorf("look failed: got %v", err)
	}
	if err := settleUnpaused(context.Background(), fastSettle, func() (bool, error) { return true, nil }, func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("unpause failed: got %v", err)
	}
}
