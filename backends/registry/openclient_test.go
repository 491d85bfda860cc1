package registry_test

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/memory"
	"github.com/fencecheck/fencecheck/backends/registry"
)

// OpenClientWith opens the shared storage the spec names and hands it to
// the program's opener, then applies the spec's lease check: a write
// through the client lands in the fenced storage served over loopback,
// and --lease-check none makes the client trust its grants.
func TestOpenClientWithOpensTheStorageAndAppliesTheLeaseCheck(t *testing.T) {
	store := fenced.NewStore(fenced.All)
	srv := httptest.NewServer(fenced.Handler(store))
	defer srv.Close()
	svc := memory.NewService(time.Second)
	var made *memory.Client
	open := func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
		if storage == nil {
			t.Fatal("the opener got no storage for storage fenced")
		}
		made = memory.NewClient(svc, storage, spec.LeaseTTL, nil)
		return made, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	spec := backends.ClientSpec{Backend: "memory", Storage: registry.DefaultStorage, Fencing: "all", StorageURL: srv.URL, LeaseTTL: time.Second, LeaseCheck: registry.LeaseCheckNone}
	c, err := registry.OpenClientWith(ctx, spec, open)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !made.Trust {
		t.Error("--lease-check none was not applied")
	}
	tok, err := c.Acquire(ctx, "k0")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(ctx, "k0", tok, 0, 7); err != nil {
		t.Fatal(err)
	}
	if v, err := store.ReadLockFree(ctx, "k0"); err != nil || v != 7 {
		t.Errorf("the write did not reach the storage: %d, %v", v, err)
	}

	spec.LeaseCheck = "sometimes"
	if _, err := registry.OpenClientWith(ctx, spec, open); err == nil || !strings.Contains(err.Error(), "unknown lease check") {
		t.Errorf("an unknown lease check was accepted: %v", err)
	}
	spec.LeaseCheck, spec.Fencing = "", "maybe"
	if _, err := registry.OpenClientWith(ctx, spec, open); err == nil || !strings.Contains(err.Error(), "fencing mode") {
		t.Errorf("an unknown fencing mode reached the opener: %v", err)
	}
}
