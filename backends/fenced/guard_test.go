package fenced_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/lockclient"
)

func TestGuardChecksTheLeaseAndMarksTheFailpoint(t *testing.T) {
	store := fenced.NewStore(fenced.Writes)
	var leases backends.Leases[*backends.Grant]
	g := fenced.Guard{Storage: store, Check: leases.Check}
	var points []string
	ctx := backends.WithFailpoint(context.Background(), func(name string) { points = append(points, name) })

	if err := g.Write(ctx, "k", 1, 0, 5); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("write without a lease: %v, want lease-lost", err)
	}
	if _, err := g.Read(ctx, "k", 1); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("read without a lease: %v, want lease-lost", err)
	}
	if len(points) != 0 {
		t.Fatalf("failpoints %v passed by ops the check refused", points)
	}
	if v, _ := store.Read(ctx, "k", 0); v != 0 {
		t.Fatalf("a refused write reached the storage: %d", v)
	}

	leases.Put("k", backends.NewGrant(1))
	if err := g.Write(ctx, "k", 1, 0, 5); err != nil {
		t.Fatalf("write under the lease: %v", err)
	}
	if v, err := g.Read(ctx, "k", 1); err != nil || v != 5 {
		t.Fatalf("read under the lease: %d %v, want 5", v, err)
	}
	if len(points) != 1 || points[0] != lockclient.FailpointWriteChecked {
		t.Fatalf("failpoints %v, want one %s for the one write", points, lockclient.FailpointWriteChecked)
	}
}

func TestTrustingGuardWritesWithoutALease(t *testing.T) {
	store := fenced.NewStore(fenced.None)
	var leases backends.Leases[*backends.Grant]
	checked := 0
	g := fenced.Guard{Storage: store, Check: func(k string, tok uint64) error { checked++; return leases.Check(k, tok) }}
	g.TrustGrants()
	ctx := context.Background()
	if err := g.Write(ctx, "k", 0, 0, 7); err != nil {
		t.Fatalf("a trusting client's write without a lease: %v, want it sent", err)
	}
	if v, err := g.Read(ctx, "k", 0); err != nil || v != 7 {
		t.Fatalf("a trusting client's read without a lease: %d %v, want 7", v, err)
	}
	if checked != 2 {
		t.Fatalf("the check ran %d times, want 2 (it still runs; its verdict is ignored)", checked)
	}
	// Fencing still refuses a stale token when the storage checks them.
	fstore := fenced.NewStore(fenced.All)
	g.Storage = fstore
	if err := g.Write(ctx, "k", 5, 0, 1); err != nil {
		t.Fatal(err)
	}
	if err := g.Write(ctx, "k", 4, 0, 2); !errors.Is(err, lockclient.ErrFenced) {
		t.Fatalf("a trusting client's stale write: %v, want fenced", err)
	}
}
