package backends_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/lockclient"
)

func TestLeasesBookkeeping(t *testing.T) {
	var ls backends.Leases[*backends.Grant]
	if err := ls.Free("k"); err != nil {
		t.Fatalf("Free on an empty client: %v", err)
	}
	if err := ls.Check("k", 1); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("Check without a lease: %v, want lease-lost", err)
	}
	g := backends.NewGrant(7)
	ls.Put("k", g)
	err := ls.Free("k")
	if typ, text := lockclient.Outcome(err); typ != lockclient.TypeFail || text != "already holding k" {
		t.Fatalf("Free while holding: %v %q, want fail \"already holding k\"", typ, text)
	}
	if err := ls.Check("k", 7); err != nil {
		t.Fatalf("Check of the held lease: %v", err)
	}
	if err := ls.Check("k", 6); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("Check with another token: %v, want lease-lost", err)
	}
	got, err := ls.Take("k")
	if err != nil || got != g {
		t.Fatalf("Take: %v %v", got, err)
	}
	_, err = ls.Take("k")
	if typ, text := lockclient.Outcome(err); typ != lockclient.TypeFail || text != "release of k without holding it" {
		t.Fatalf("second Take: %v %q, want fail \"release of k without holding it\"", typ, text)
	}
	ls.Put("a", backends.NewGrant(1))
	ls.Put("b", backends.NewGrant(2))
	if all := ls.TakeAll(); len(all) != 2 {
		t.Fatalf("TakeAll gave %d leases, want 2", len(all))
	}
	if _, ok := ls.Get("a"); ok {
		t.Fatal("a lease is still there after TakeAll")
	}
}

func TestGrantKeepAliveLearnsTheLoss(t *testing.T) {
	var ls backends.Leases[*backends.Grant]
	g := backends.NewGrant(3)
	ls.Put("k", g)
	var renewals atomic.Int32
	g.KeepAlive(time.Millisecond, func(context.Context) bool { return renewals.Add(1) == 3 })
	deadline := time.Now().Add(5 * time.Second)
	for !g.Lost() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if !g.Lost() {
		t.Fatal("the grant never learnt that its lease was lost")
	}
	if err := ls.Check("k", 3); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("Check of a lost lease: %v, want lease-lost", err)
	}
	g.Stop() // returns: the keepalive has ended
	if n := renewals.Load(); n != 3 {
		t.Fatalf("%d renewals, want 3: the keepalive goes on after the loss", n)
	}
}

func TestGrantStopEndsTheKeepAlive(t *testing.T) {
	g := backends.NewGrant(1)
	var renewals atomic.Int32
	g.KeepAlive(time.Millisecond, func(stopped context.Context) bool {
		renewals.Add(1)
		<-stopped.Done() // a renewal in flight when the lock is released
		return true
	})
	for renewals.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	g.Stop()
	if g.Lost() {
		t.Fatal("a renewal that returned after Stop was counted")
	}
	backends.NewGrant(2).Stop() // a grant whose keepalive never started stops at once
}
