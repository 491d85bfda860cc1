package fenced_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
)

func TestGuardChecksTheLeaseAndMarksTheFailpoint(t *testing.T) {
	store := fenced.NewStore(fenced.Writes)
	var leases backends.Leases[*backends.Grant]
	g := fenced.Guard{Storage: store, Check: leases.Check}
	var points []string
	ctx := backends.WithFailpoint(context.Background(), func(name string) { points = append(points, name) })

	if err := g.Write(ctx, "k", 1, 0, 5); !errors.Is(err, backends.ErrLeaseLost) {
		t.Fatalf("write without a lease: %v, want lease-lost", err)
	}
	if _, err := g.Read(ctx, "k", 1); !errors.Is(err, backends.ErrLeaseLost) {
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
	if len(points) != 1 || points[0] != backends.FailpointWriteChecked {
		t.Fatalf("failpoints %v, want one %s for the one write", points, backends.FailpointWriteChecked)
	}
}
