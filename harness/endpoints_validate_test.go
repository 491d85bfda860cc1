package harness

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/nemesis"
)

// endpointsConfig is a run against a user's etcd by its endpoints.
func endpointsConfig(t *testing.T, nemesisList ...string) Config {
	cfg := memoryConfig(t, "all", nemesisList...)
	cfg.Backend, cfg.LeaseTTL, cfg.Nodes = "etcd", 2*time.Second, 3 // --nodes' default, which --endpoints leaves unused
	cfg.Endpoints = []string{"http://etcd-1:2379", " http://etcd-2:2379"}
	cfg.Given = map[string]bool{"endpoints": true}
	return cfg
}

// What a run against the user's servers can do is accepted: the faults
// that act on fencecheck's own containers, a --client-endpoints binding,
// ZooKeeper's host:port form; the endpoints are kept trimmed and counted
// as the run's servers.
func TestEndpointsAccepted(t *testing.T) {
	for _, f := range []string{"none", "pause", "pause-holder", "partition-client", "partition-client-storage", "pause-holder,partition-client"} {
		cfg := endpointsConfig(t, strings.Split(f, ",")...)
		test, err := Resolve(cfg)
		if err != nil {
			t.Errorf("--nemesis %s: %v", f, err)
			continue
		}
		if got := test.Config().Endpoints; len(got) != 2 || got[1] != "http://etcd-2:2379" {
			t.Errorf("--nemesis %s: endpoints %q, want them trimmed", f, got)
		}
		if test.Servers() != 2 {
			t.Errorf("--nemesis %s: %d servers, want the 2 endpoints", f, test.Servers())
		}
	}
	zk := endpointsConfig(t, "pause-holder")
	zk.Backend, zk.Endpoints = "zookeeper", []string{"zk-1:2181", "zk-2:2181", "zk-3:2181"}
	if _, err := Resolve(zk); err != nil {
		t.Errorf("zookeeper by address: %v", err)
	}
	one := endpointsConfig(t, "pause-holder")
	one.ClientEndpoints = ClientEndpointsOne
	if _, err := Resolve(one); err != nil {
		t.Errorf("--client-endpoints one: %v", err)
	}
}

// Everything that needs the servers or sets up servers fencecheck would
// start is refused before anything is created, naming the flag and the
// way out.
func TestEndpointsRefused(t *testing.T) {
	type c struct {
		name   string
		mutate func(*Config)
		flag   string
		want   []string
	}
	cases := []c{
		{"empty list", func(c *Config) { c.Endpoints = nil }, "endpoints", []string{"empty list", "e.g. --endpoints http://server-1:2379,http://server-2:2379"}},
		{"empty entry", func(c *Config) { c.Endpoints = []string{"http://a:2379", ""} }, "endpoints", []string{"an empty entry"}},
		{"no scheme", func(c *Config) { c.Endpoints = []string{"etcd-1:2379"} }, "endpoints", []string{`"etcd-1:2379"`, "http://HOST:2379"}},
		{"no port", func(c *Config) { c.Endpoints = []string{"http://etcd-1"} }, "endpoints", []string{"no port"}},
		{"https", func(c *Config) { c.Endpoints = []string{"https://etcd-1:2379"} }, "endpoints", []string{"TLS", "http://"}},
		{"a path", func(c *Config) { c.Endpoints = []string{"http://etcd-1:2379/v3"} }, "endpoints", []string{"host and port only"}},
		{"twice", func(c *Config) { c.Endpoints = []string{"http://a:2379", "http://a:2379"} }, "endpoints", []string{"named twice"}},
		{"zookeeper URL", func(c *Config) { c.Backend, c.Endpoints = "zookeeper", []string{"http://zk-1:2181"} }, "endpoints", []string{"host:port"}},
		{"unsupported backend", func(c *Config) { c.Backend = "redis" }, "endpoints", []string{"backend redis cannot be tested by its endpoints", "--backend etcd or zookeeper"}},
		{"memory", func(c *Config) { c.Backend = "memory" }, "endpoints", []string{"backend memory"}},
		{"nodes", func(c *Config) { c.Given["nodes"], c.Nodes = true, 5 }, "nodes", []string{"--endpoints", "drop --nodes"}},
		{"server-version", func(c *Config) { c.Given["server-version"], c.ServerVersion = true, "3.5" }, "server-version", []string{"drop --server-version"}},
		{"server-image", func(c *Config) { c.Given["server-image"], c.ServerImage = true, "etcd:v3.6" }, "server-image", []string{"drop --server-image"}},
		{"power-layer", func(c *Config) { c.Given["power-layer"], c.PowerLayer = true, true }, "power-layer", []string{"drop --power-layer"}},
		{"a server setting", func(c *Config) { c.Options = map[string]string{"etcd-compact-every": "10s"} }, "etcd-compact-every", []string{"they run with your settings"}},
		{"storage in the service", func(c *Config) { c.Storage, c.Fencing = "etcd", "none" }, "storage", []string{"--storage fenced"}},
		{"in process", func(c *Config) { c.Cluster = "inprocess" }, "cluster", []string{"Docker containers"}},
		{"network alone", func(c *Config) { c.Endpoints, c.Given, c.EndpointsNetwork = nil, nil, "dev_default" }, "endpoints-network", []string{"add --endpoints"}},
		{"bad network", func(c *Config) { c.EndpointsNetwork = "a b" }, "endpoints-network", []string{"not a Docker network"}},
	}
	for _, f := range []string{"kill", "kill-leader", "partition", "partition-one", "partition-primary", "partition-primary-clients", "pause-server", "pause-leader", "pause-all",
		"latency", "clock-jump", "clock-skew", "clock-strobe", "clock-jump-quorum", "power-loss", "power-loss-all", "failpoint"} {
		if _, ok := nemesis.Lookup(f); !ok {
			t.Errorf("no fault %s in the registry", f)
			continue
		}
		cases = append(cases, c{"fault " + f, func(c *Config) { c.Nemesis = []string{"pause-holder", f} }, "nemesis",
			[]string{"fault " + f + " needs access to the servers; --endpoints gives none", "accepted with --endpoints: none, partition-client, partition-client-storage, pause, pause-holder"}})
	}
	for _, tc := range cases {
		cfg := endpointsConfig(t, "pause-holder")
		tc.mutate(&cfg)
		_, err := Resolve(cfg)
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != tc.flag {
			t.Errorf("%s: got %v, want a usage error naming --%s", tc.name, err, tc.flag)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, err, w)
			}
		}
	}
}

// The run's parameters say the service was the user's.
func TestEndpointsParams(t *testing.T) {
	cfg := endpointsConfig(t, "pause-holder")
	cfg.EndpointsNetwork = "dev_default"
	test, err := Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range test.params(nil) {
		got[p.Name] = p.Value
	}
	if got["endpoints"] != "http://etcd-1:2379,http://etcd-2:2379" || got["endpoints-network"] != "dev_default" || got["server-version"] != "" || got["nodes"] != "2" {
		t.Errorf("params %v: want the endpoints, their network, 2 nodes and no server version asked for", got)
	}
}
