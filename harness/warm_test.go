package harness

import (
	"context"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/compose/engine"
)

// Which runs may take and give a warm cluster, and what must match.
func TestWarmKey(t *testing.T) {
	st := &runState{clusters: NewClusters()}
	spec := engine.Spec{Servers: 3, Clients: 5, Image: "fencecheck/node:x", Binary: "/bin/check"}
	cfg := Config{Backend: "etcd", Nemesis: []string{"pause-holder"}}
	key := warmKey(&cfg, st, spec)
	if key == "" {
		t.Fatal("a plain Docker run takes no warm cluster")
	}
	other := cfg
	other.Recipe, other.Fencing, other.LeaseCheck, other.Storage = "lock-rpc", "all", "none", "etcd"
	if warmKey(&other, st, spec) != key {
		t.Error("recipe, fencing, lease check or storage changed the key: the servers' fresh start sets them, the containers are the same")
	}
	for name, c := range map[string]func(*Config, *engine.Spec){
		"another backend":      func(c *Config, _ *engine.Spec) { c.Backend = "zookeeper" },
		"more servers":         func(_ *Config, s *engine.Spec) { s.Servers = 5 },
		"fewer clients":        func(_ *Config, s *engine.Spec) { s.Clients = 2 },
		"another client image": func(_ *Config, s *engine.Spec) { s.ClientImage = "fencecheck/client:y" },
	} {
		c2, s2 := cfg, spec
		c(&c2, &s2)
		if k := warmKey(&c2, st, s2); k == key || k == "" {
			t.Errorf("%s: key %q (the first run's %q)", name, k, key)
		}
	}
	for name, c := range map[string]func(*Config){
		"--fresh-cluster":             func(c *Config) { c.FreshCluster = true },
		"--keep-cluster":              func(c *Config) { c.KeepCluster = true },
		"a fault that prepares start": func(c *Config) { c.Nemesis = []string{"clock-jump"} },
	} {
		c2 := cfg
		c(&c2)
		if k := warmKey(&c2, st, spec); k != "" {
			t.Errorf("%s: key %q, want none", name, k)
		}
	}
	if k := warmKey(&cfg, &runState{}, spec); k != "" {
		t.Errorf("a lone run (no Clusters): key %q", k)
	}
}

// A closed set of clusters takes nothing back, and a nil one is Run.
func TestClustersTakeGive(t *testing.T) {
	p := NewClusters()
	a, b := &engine.Cluster{TestID: "a"}, &engine.Cluster{TestID: "b"}
	if ka, _ := p.give("k", a); !ka {
		t.Fatal("give refused")
	}
	if kb, _ := p.give("k", b); !kb {
		t.Fatal("give refused")
	}
	if p.take("other") != nil {
		t.Fatal("took a cluster of another key")
	}
	if got := p.take("k"); got != b {
		t.Fatalf("took %v", got)
	}
	p.mu.Lock()
	p.idle = map[string][]*engine.Cluster{}
	p.mu.Unlock()
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if kept, _ := p.give("k", a); kept {
		t.Fatal("a closed set took a cluster back")
	}
	var none *Clusters
	if err := none.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// Bounded to two idle clusters, a third given back makes the one idle
// longest go, whatever its key, and a taken cluster is no longer idle.
func TestClustersUpTo(t *testing.T) {
	p := NewClustersUpTo(2)
	a, b, c, d := &engine.Cluster{TestID: "a"}, &engine.Cluster{TestID: "b"}, &engine.Cluster{TestID: "c"}, &engine.Cluster{TestID: "d"}
	for _, cl := range []*engine.Cluster{a, b} {
		if kept, ev := p.give("etcd", cl); !kept || ev != nil {
			t.Fatalf("give %s: kept %v, evicted %v", cl.TestID, kept, ev)
		}
	}
	if kept, ev := p.give("zookeeper", c); !kept || ev != a {
		t.Fatalf("third idle cluster: kept %v, evicted %v, want a", kept, ev)
	}
	if got := p.take("etcd"); got != b {
		t.Fatalf("took %v, want b (a was removed)", got)
	}
	if p.take("etcd") != nil {
		t.Fatal("took the evicted cluster")
	}
	if kept, ev := p.give("zookeeper", d); !kept || ev != nil {
		t.Fatalf("two idle after a take: evicted %v", ev)
	}
}

func TestParallelWidth(t *testing.T) {
	for _, c := range []struct {
		cpus    int
		mem     int64
		n, most int
	}{
		{2, 24 << 30, 2, 6},     // this machine: cores decide
		{64, 256 << 30, 16, 16}, // a big box: the cap
		{16, 8 << 30, 2, 2},     // little memory decides
		{4, 0, 1, 1},            // memory unknown: one
	} {
		w := ParallelWidth(c.cpus, c.mem)
		if w.N != c.n || w.Most != c.most {
			t.Errorf("%d cores, %d bytes: %d (most %d), want %d (most %d): %s", c.cpus, c.mem, w.N, w.Most, c.n, c.most, w.Why)
		}
	}
	w := ParallelWidth(2, 24<<30)
	if err := CheckParallel(7, w); err == nil || !strings.Contains(err.Error(), "--parallel") || !strings.Contains(err.Error(), "at most 6") {
		t.Errorf("7 slots on 24 GiB: %v", err)
	}
	if err := CheckParallel(0, w); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("0 slots: %v", err)
	}
	if err := CheckParallel(6, w); err != nil {
		t.Error(err)
	}
}

// Faults that freeze servers go at most one run a core side by side
// (nemesis.Kind.Contended), and the lowering says so; other faults, and
// a width within the cores, stand.
func TestContendedWidth(t *testing.T) {
	w := ParallelWidth(2, 24<<30)
	n, why := ContendedWidth(4, w, []string{"pause-leader", "pause-all"})
	if n != 2 || !strings.Contains(why, "--parallel 4 lowered to 2") || !strings.Contains(why, "pause-leader and pause-all") {
		t.Errorf("jepsen-etcd's faults at 4 on 2 cores: %d, %q", n, why)
	}
	for _, c := range []struct {
		n      int
		faults []string
	}{{2, []string{"pause-leader"}}, {4, []string{"pause-holder"}}, {6, []string{"none"}}, {1, []string{"pause-all"}}} {
		if n, why := ContendedWidth(c.n, w, c.faults); n != c.n || why != "" {
			t.Errorf("%d runs under %v: lowered to %d (%q)", c.n, c.faults, n, why)
		}
	}
}
