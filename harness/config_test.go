package harness

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// Validate asks the question buildFaults asks, so a fault the cluster
// cannot inject is refused before Run creates anything.
func TestValidateRefusesFaultsTheClusterCannotInject(t *testing.T) {
	type c struct {
		backend, recipe, cluster string
		nodes                    int
		fault                    string
		ok                       bool
	}
	for _, tc := range []c{
		{"memory", "", "inprocess", 3, "pause", true},
		{"memory", "", "inprocess", 3, "pause-holder", true},
		{"memory", "", "inprocess", 3, "partition", false},
		{"memory", "", "inprocess", 3, "latency", false},
		{"memory", "", "docker", 3, "partition", false},
		{"memory", "", "docker", 3, "partition-client", true},
		{"memory", "", "docker", 3, "kill", true},
		{"postgres", "", "docker", 3, "partition-one", false},
		{"postgres", "", "docker", 3, "partition-client-storage", true},
		{"redis", "setnx", "docker", 3, "partition-halves", false},
		{"redis", "redlock", "docker", 3, "partition-ring", true},
		{"etcd", "", "docker", 3, "partition-bridge", true},
		{"zookeeper", "", "docker", 5, "partition", true},
	} {
		cfg := memoryConfig(t, "none", tc.fault)
		cfg.Backend, cfg.Recipe, cfg.Cluster, cfg.Nodes = tc.backend, tc.recipe, registry.Cluster(tc.cluster), tc.nodes
		cfg.LeaseTTL = 2 * time.Second
		cfg, err := checked(cfg)
		var ue *usage.Error
		switch {
		case tc.ok && err != nil:
			t.Errorf("%+v: %v", tc, err)
		case !tc.ok && (!errors.As(err, &ue) || ue.Flag != "nemesis"):
			t.Errorf("%+v: got %v, want a usage error naming --nemesis", tc, err)
		}
	}
}

// Run refuses bad input before it creates anything in the store.
func TestRunCreatesNothingForBadInput(t *testing.T) {
	for flag, mutate := range map[string]func(*Config){
		"nemesis": func(c *Config) { c.Nemesis = []string{"pause", "partition"} },
		"name":    func(c *Config) { c.Name = "../../escape" },
		"nodes":   func(c *Config) { c.Given = map[string]bool{"nodes": true} },
	} {
		cfg := memoryConfig(t, "none", "pause")
		cfg.Store = filepath.Join(t.TempDir(), "store")
		mutate(&cfg)
		_, err := Run(quiet(), cfg, nil)
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != flag {
			t.Errorf("%s: got %v, want a usage error naming --%s", flag, err, flag)
		}
		if _, err := os.Stat(cfg.Store); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the store was created (%v)", flag, err)
		}
	}
}

func TestValidateName(t *testing.T) {
	for name, ok := range map[string]bool{
		"etcd-mutex-fenced-none-pause": true, "my test (2)": true, "v1.2": true, ".hidden": true,
		"../../escape": false, "a/b": false, `a\b`: false, ".": false, "..": false, "latest": false,
		"tab\there": false, "nul\x00": false, "/abs": false,
	} {
		cfg := memoryConfig(t, "none", "none")
		cfg.Name = name
		cfg, err := checked(cfg)
		if ok != (err == nil) {
			t.Errorf("%q: %v", name, err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "--name: ") {
			t.Errorf("%q: %v does not name --name", name, err)
		}
	}
}

// A flag that means nothing for the backend is refused only when given:
// configs built in code (compare, benchmarks) carry the defaults.
func TestNodesAndPauseDurationOnlyWhenGiven(t *testing.T) {
	for name, tc := range map[string]struct {
		backend string
		nodes   int
		pause   time.Duration
		nemesis string
		given   []string
		flag    string // "" when valid
	}{
		"memory defaults":            {"memory", 3, 0, "none", nil, ""},
		"memory nodes 0 by default":  {"memory", 0, 0, "pause", nil, ""},
		"memory nodes given":         {"memory", 3, 0, "pause", []string{"nodes"}, "nodes"},
		"postgres nodes given":       {"postgres", 5, 0, "pause", []string{"nodes"}, "nodes"},
		"redis nodes given":          {"redis", 5, 0, "pause", []string{"nodes"}, "nodes"},
		"etcd nodes 5 given":         {"etcd", 5, 0, "pause", []string{"nodes"}, ""},
		"etcd nodes 4":               {"etcd", 4, 0, "pause", nil, "nodes"},
		"zookeeper nodes 0 given":    {"zookeeper", 0, 0, "pause", []string{"nodes"}, "nodes"},
		"pause 0 by default":         {"memory", 3, 0, "pause", nil, ""},
		"pause 0 given":              {"memory", 3, 0, "pause", []string{"pause-duration"}, "pause-duration"},
		"pause negative":             {"memory", 3, -time.Second, "pause", nil, "pause-duration"},
		"pause given, no faults":     {"memory", 3, time.Second, "none", []string{"pause-duration"}, "pause-duration"},
		"pause given, a pause":       {"memory", 3, time.Second, "pause-holder", []string{"pause-duration"}, ""},
		"pause given, a kill holds":  {"etcd", 3, time.Second, "kill", []string{"pause-duration"}, ""},
		"pause given, latency holds": {"etcd", 3, time.Second, "latency", []string{"pause-duration"}, ""},
		"memory keep-cluster given":  {"memory", 3, 0, "pause", []string{"keep-cluster"}, "keep-cluster"},
		"memory agent-binary given":  {"memory", 3, 0, "pause", []string{"agent-binary"}, "agent-binary"},
		"etcd keep-cluster given":    {"etcd", 3, 0, "pause", []string{"keep-cluster"}, ""},
	} {
		cfg := memoryConfig(t, "none", tc.nemesis)
		cfg.Backend, cfg.Nodes, cfg.PauseDuration = tc.backend, tc.nodes, tc.pause
		cfg.LeaseTTL = 2 * time.Second
		cfg.Given = map[string]bool{}
		for _, g := range tc.given {
			cfg.Given[g] = true
		}
		cfg, err := checked(cfg)
		var ue *usage.Error
		switch {
		case tc.flag == "" && err != nil:
			t.Errorf("%s: %v", name, err)
		case tc.flag != "" && (!errors.As(err, &ue) || ue.Flag != tc.flag):
			t.Errorf("%s: got %v, want a usage error naming --%s", name, err, tc.flag)
		}
	}
}

// A run records the server build it asked for: the default's name where
// a backend has a choice, "default" where it has one build — never "" —
// and "default" is accepted as a value by every backend.
func TestServerVersionRecordsTheDefault(t *testing.T) {
	for _, tc := range []struct {
		backend, given, recorded, refused string
	}{
		{"etcd", "", "3.6", ""},
		{"etcd", "default", "3.6", ""},
		{"etcd", "3.4", "3.4", ""},
		{"etcd", "3.5", "3.5", ""},
		{"etcd", "3.7", "3.7", ""},
		{"etcd", "3.3", "", `--server-version: backend etcd has no server version "3.3" (accepted: 3.6, 3.4, 3.5, 3.7, default for 3.6, or ` + images.EtcdReleasesAccepted + `): "3.3" is not an exact etcd release (major.minor.patch)`},
		{"etcd", "3.5.4", "3.5.4", ""},
		{"nats", "2.10.22", "2.10.22", ""},
		{"zookeeper", "", "default", ""},
		{"zookeeper", "default", "default", ""},
		{"zookeeper", "3.9", "", "--server-version: backend zookeeper has one server build (Debian's zookeeper package (3.8)); drop the flag"},
		{"postgres", "", "default", ""},
		{"redis", "", "default", ""},
		{"memory", "", "default", ""},
	} {
		cfg := memoryConfig(t, "none", "none")
		cfg.Backend, cfg.ServerVersion, cfg.Cluster, cfg.Nodes, cfg.LeaseTTL = tc.backend, tc.given, "", 3, 2*time.Second
		cfg, err := checked(cfg)
		if tc.refused != "" {
			if err == nil || err.Error() != tc.refused {
				t.Errorf("%s --server-version %q: got %v, want %q", tc.backend, tc.given, err, tc.refused)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s --server-version %q: %v", tc.backend, tc.given, err)
			continue
		}
		var recorded string
		for _, p := range reported(cfg).params(nil) {
			if p.Name == "server-version" {
				recorded = p.Value
			}
		}
		if recorded != tc.recorded {
			t.Errorf("%s --server-version %q records %q, want %q", tc.backend, tc.given, recorded, tc.recorded)
		}
	}
}

// checked is cfg as a run resolves it: its defaults filled in and every
// field checked (its outputs aside).
func checked(cfg Config) (Config, error) {
	t := defaulted(cfg)
	return t.cfg, t.validate()
}

// defaulted is cfg's Test with its defaults filled in, nothing checked.
func defaulted(cfg Config) *Test {
	t := newTest(cfg, nil)
	t.cfg.defaults(t.info, t.known, t.client)
	t.own = t.cfg.ownStorage(t.info)
	return t
}

// reported is defaulted with the server count the report gives.
func reported(cfg Config) *Test {
	t := defaulted(cfg)
	t.servers = t.countServers()
	return t
}
