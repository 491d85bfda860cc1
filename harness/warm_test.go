package harness

import (
	"context"
	"testing"

	"github.com/fencecheck/fencecheck/compose"
)

// Which runs may take and give a warm cluster, and what must match.
func TestWarmKey(t *testing.T) {
	st := &runState{clusters: NewClusters()}
	spec := compose.Spec{Servers: 3, Clients: 5, Image: "fencecheck/node:x", Binary: "/bin/check"}
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
	for name, c := range map[string]func(*Config, *compose.Spec){
		"another backend":      func(c *Config, _ *compose.Spec) { c.Backend = "zookeeper" },
		"more servers":         func(_ *Config, s *compose.Spec) { s.Servers = 5 },
		"fewer clients":        func(_ *Config, s *compose.Spec) { s.Clients = 2 },
		"another client image": func(_ *Config, s *compose.Spec) { s.ClientImage = "fencecheck/client:y" },
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
	a, b := &compose.Cluster{TestID: "a"}, &compose.Cluster{TestID: "b"}
	if !p.give("k", a) || !p.give("k", b) {
		t.Fatal("give refused")
	}
	if p.take("other") != nil {
		t.Fatal("took a cluster of another key")
	}
	if got := p.take("k"); got != b {
		t.Fatalf("took %v", got)
	}
	p.mu.Lock()
	p.idle = map[string][]*compose.Cluster{}
	p.mu.Unlock()
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p.give("k", a) {
		t.Fatal("a closed set took a cluster back")
	}
	var none *Clusters
	if err := none.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}
