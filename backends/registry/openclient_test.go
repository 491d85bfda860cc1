package registry_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// A backend whose clients run in a program of their own is refused by
// OpenClient (the check binary's `check agent`) with that program's name
// and how to build it, and it is the only backend that says so.
func TestOpenClientNamesTheAgentProgram(t *testing.T) {
	var withAgent []string
	for _, b := range registry.All() {
		if b.Agent == nil {
			continue
		}
		withAgent = append(withAgent, b.Name)
		if _, err := os.Stat(filepath.Join("..", "..", filepath.FromSlash(b.Agent.Package), "main.go")); err != nil {
			t.Errorf("%s: its agent program's package %s is not in this module: %v", b.Name, b.Agent.Package, err)
		}
		_, err := registry.OpenClient(context.Background(), backends.ClientSpec{Backend: b.Name, Storage: registry.DefaultStorage, Fencing: "all", StorageURL: "http://storage:7001"})
		if err == nil {
			t.Fatalf("%s: check agent opened a client that runs in %s", b.Name, b.Agent.Name)
		}
		for _, want := range []string{b.Agent.Name + " agent", "go build -o bin/" + b.Agent.Name + " " + b.Agent.Package} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the error does not say %q: %v", b.Name, want, err)
			}
		}
	}
	if len(withAgent) != 1 || withAgent[0] != "kubernetes" {
		t.Errorf("backends with an agent program of their own: %v, want kubernetes's alone", withAgent)
	}
	if b, _ := registry.Lookup("kubernetes"); b.Agent.Name != "check-kubernetes" || b.Agent.Package != "./cmd/check-kubernetes" {
		t.Errorf("kubernetes's agent program: %+v", b.Agent)
	}
}
