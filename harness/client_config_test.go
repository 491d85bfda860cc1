package harness

import (
	"strings"
	"testing"
	"time"
)

// --client is refused, naming why, where the program could not run.
func TestClientFlagRefusals(t *testing.T) {
	dir := "../examples/clients/redislock"
	base := func() Config {
		return Config{Backend: "redis", Cluster: "docker", Fencing: "none", Nemesis: []string{"none"}, Clients: 5, Keys: 1,
			TimeLimit: 10 * time.Second, LeaseTTL: 2 * time.Second, NemesisInterval: time.Second, CheckTimeout: time.Minute,
			Store: t.TempDir(), ClientDir: dir, Given: map[string]bool{}}
	}
	cases := map[string]struct {
		edit func(*Config)
		want string
	}{
		"memory":  {func(c *Config) { c.Backend, c.Cluster = "memory", "inprocess" }, "--client: the memory backend"},
		"recipe":  {func(c *Config) { c.Recipe = "redlock"; c.Given["recipe"] = true }, "--recipe: --recipe picks one of fencecheck's own"},
		"storage": {func(c *Config) { c.Storage = "etcd" }, "--storage: backend redis cannot use storage \"etcd\""},
		"fencing": {func(c *Config) { c.Storage, c.Fencing = "postgres", "writes"; c.Given["fencing"] = true }, "--fencing: with --client and --storage postgres your program checks the token itself"},
		"missing": {func(c *Config) { c.ClientDir = "/nonexistent" }, "--client: /nonexistent: no such directory"},
	}
	for name, tc := range cases {
		cfg := base()
		tc.edit(&cfg)
		cfg, err := checked(cfg)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
	test, err := resolve(base(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if test.Name() != "redis-redislock-fenced-none-none" || test.Client().Manifest.Name != "redislock" {
		t.Errorf("name %s", test.Name())
	}
	if test.own != nil {
		t.Error("the fenced storage node is not one the client checks itself")
	}
}

// --client with a storage the program writes itself, with its own fence
// check: PostgreSQL with any backend, etcd with etcd.
func TestClientOwnStorage(t *testing.T) {
	for _, tc := range []struct{ backend, storage, name string }{
		{"zookeeper", "postgres", "zookeeper-redislock-postgres-pause-holder"},
		{"etcd", "postgres", "etcd-redislock-postgres-pause-holder"},
		{"etcd", "etcd", "etcd-redislock-etcd-pause-holder"},
	} {
		cfg := Config{Backend: tc.backend, Cluster: "docker", Storage: tc.storage, Fencing: "none", Nemesis: []string{"pause-holder"}, Clients: 3, Keys: 1, Nodes: 3,
			TimeLimit: 10 * time.Second, LeaseTTL: 2 * time.Second, NemesisInterval: time.Second, CheckTimeout: time.Minute,
			Store: t.TempDir(), ClientDir: "../examples/clients/redislock", Given: map[string]bool{}}
		test, err := resolve(cfg, nil)
		if err != nil {
			t.Fatalf("%s/%s: %v", tc.backend, tc.storage, err)
		}
		if test.Name() != tc.name {
			t.Errorf("%s/%s: name %s, want %s", tc.backend, tc.storage, test.Name(), tc.name)
		}
		if test.fencingLabel() != "client" {
			t.Errorf("%s/%s: fencing shown as %q", tc.backend, tc.storage, test.fencingLabel())
		}
		cs := test.own
		if cs == nil || cs.Read == nil || cs.Describe == nil {
			t.Fatalf("%s/%s: no client storage", tc.backend, tc.storage)
		}
		init := cs.Describe("postgres://postgres@storage:5432/postgres?sslmode=disable", "pw", []string{"http://n1:2379"})
		if init.Backend != tc.storage || init.Fencing != "client" {
			t.Errorf("%s/%s: init storage %+v", tc.backend, tc.storage, init)
		}
	}
}

// A --client run on Redis asks for its masters with --nodes (a Redlock
// client needs five); without --client the recipe fixes the count.
func TestClientRunAsksForRedisMasters(t *testing.T) {
	base := func(nodes int, client bool) Config {
		c := Config{Backend: "redis", Cluster: "docker", Fencing: "none", Nemesis: []string{"pause-holder"}, Clients: 3, Keys: 1, Nodes: nodes,
			TimeLimit: 10 * time.Second, LeaseTTL: 2 * time.Second, NemesisInterval: time.Second, CheckTimeout: time.Minute,
			Store: t.TempDir(), Given: map[string]bool{"nodes": true}}
		if client {
			c.ClientDir = "../examples/clients/redislock"
		}
		return c
	}
	for _, n := range []int{1, 3, 5} {
		test, err := resolve(base(n, true), nil)
		if err != nil {
			t.Fatalf("--client --nodes %d: %v", n, err)
		}
		if got := test.Servers(); got != n {
			t.Errorf("--client --nodes %d: %d servers", n, got)
		}
		if got, err := test.Config().Servers(); err != nil || got != n {
			t.Errorf("--client --nodes %d: %d servers asked of the config, %v", n, got, err)
		}
	}
	if _, err := checked(base(2, true)); err == nil || !strings.Contains(err.Error(), "--nodes: ") || !strings.Contains(err.Error(), "1, 3 or 5") {
		t.Errorf("--client --nodes 2: %v, want a refusal naming 1, 3 or 5", err)
	}
	if _, err := checked(base(5, false)); err == nil || !strings.Contains(err.Error(), "--recipe") {
		t.Errorf("--nodes 5 without --client: %v, want the recipe's count", err)
	}
	c := base(5, true)
	c.Given = map[string]bool{}
	if got, err := c.Servers(); err != nil || got != 1 {
		t.Errorf("--client without --nodes: %d servers, %v; want the default recipe's one", got, err)
	}
}
