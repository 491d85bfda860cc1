package registry_test

import (
	"slices"
	"testing"

	"github.com/fencecheck/fencecheck/backends"
	_ "github.com/fencecheck/fencecheck/backends/all"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// Every backend describes itself completely: the harness relies on each
// field it asks about.
func TestEveryBackendDescribesItself(t *testing.T) {
	want := []string{"etcd", "kubernetes", "memory", "nats", "postgres", "redis", "zookeeper"}
	if got := registry.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, b := range registry.All() {
		if b.NewDB == nil || (b.OpenClient == nil) == (b.Agent == nil) || b.MinTTL <= 0 {
			t.Errorf("%s: NewDB, MinTTL and either OpenClient or an agent program are required", b.Name)
		}
		if b.RunsInProcess() != (b.InProcess != nil) {
			t.Errorf("%s: clusters %v and InProcess disagree", b.Name, b.Clusters)
		}
		// Asking for the server count starts nothing and needs no test id.
		if _, n, err := b.NewDB(registry.Setup{Recipe: b.Recipes[0], Nodes: 3, LeaseTTL: b.MinTTL}); err != nil || n < 1 {
			t.Errorf("%s: NewDB for the default recipe = %d servers, %v", b.Name, n, err)
		}
	}
	if got := registry.SharedStorages(); !slices.Equal(got, []string{"fenced", "postgres"}) {
		t.Errorf("SharedStorages() = %v", got)
	}
}

// A backend's own flag belongs to it alone, and its check is its own.
func TestOptionsBelongToTheirBackend(t *testing.T) {
	if got := registry.FlagOwners("redis-persistence"); !slices.Equal(got, []string{"redis"}) {
		t.Fatalf("owners of redis-persistence = %v", got)
	}
	redis, _ := registry.Lookup("redis")
	o, ok := redis.Flag("redis-persistence")
	if !ok {
		t.Fatal("redis has no redis-persistence option")
	}
	if err := o.Check(""); err != nil {
		t.Errorf("the flag left out is refused: %v", err)
	}
	if err := o.Check("sometimes"); err == nil {
		t.Error("an unknown persistence is accepted")
	}
	etcd, _ := registry.Lookup("etcd")
	if _, ok := etcd.Flag("redis-persistence"); ok {
		t.Error("etcd claims redis-persistence")
	}
	// A recipe the backend does not have is a flag error, named as such.
	if _, _, err := redis.NewDB(registry.Setup{Recipe: "nope"}); err == nil {
		t.Error("redis NewDB accepted recipe nope")
	} else if fe, ok := err.(*usage.Error); !ok || fe.Flag != "recipe" {
		t.Errorf("redis NewDB(nope) = %v, want a --recipe usage error", err)
	}
}

// Backends describe their capabilities, so that nothing outside backends
// compares a backend's name.
func TestCapabilities(t *testing.T) {
	if got := registry.DefaultBackend(); got != "memory" {
		t.Errorf("DefaultBackend() = %q, want the one that runs in process (memory)", got)
	}
	if got := registry.OpenToClients(); !slices.Equal(got, []string{"etcd", "kubernetes", "nats", "postgres", "redis", "zookeeper"}) {
		t.Errorf("OpenToClients() = %v", got)
	}
	if got := registry.OrList([]string{"a", "b", "c"}); got != "a, b or c" {
		t.Errorf("OrList = %q", got)
	}
	for _, b := range registry.All() {
		if b.RunsInProcess() && b.ClosedToClients == "" {
			t.Errorf("%s runs in process yet says an outside client could speak to it", b.Name)
		}
	}
}

// A warm cluster empties every backend's run-time directories, not only
// the backend that ran last: any backend's storage may have run there.
func TestRunDirs(t *testing.T) {
	dirs := registry.RunDirs()
	if len(dirs) < 2 || dirs[0] != backends.DataRoot || dirs[1] != backends.LogDir {
		t.Fatalf("run dirs %q start without the data root and the log dir", dirs)
	}
	for _, b := range registry.All() {
		for _, d := range b.RunDirs {
			if !slices.Contains(dirs, d) {
				t.Errorf("%s's %s is missing from %q", b.Name, d, dirs)
			}
		}
	}
}
