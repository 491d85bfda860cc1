package harness

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// The kubernetes backend takes the faults that reach a client or a server
// node, refuses the clock faults with the reason (a static Go binary on
// the monotonic clock), and refuses another backend's recipe and --nodes:
// each before anything is created (the CLI's exit 254).
func TestValidateKubernetesCombinations(t *testing.T) {
	base := func(fault string) Config {
		cfg := memoryConfig(t, "none", fault)
		cfg.Backend, cfg.Recipe, cfg.Cluster, cfg.Nodes = "kubernetes", "", registry.ClusterDocker, 3
		cfg.LeaseTTL = 2 * time.Second
		return cfg
	}
	for _, fault := range []string{"pause-holder", "pause", "partition-client", "kill", "kill-leader", "pause-server", "partition", "partition-primary"} {
		cfg := base(fault)
		cfg, err := checked(cfg)
		if err != nil {
			t.Errorf("%s refused: %v", fault, err)
		}
	}
	for _, fault := range []string{"clock-jump", "clock-strobe"} {
		cfg := base(fault)
		cfg, err := checked(cfg)
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != "nemesis" || !strings.Contains(err.Error(), "monotonic clock") {
			t.Errorf("%s: got %v, want a --nemesis usage error that says why (the monotonic clock)", fault, err)
		}
	}
	for flag, mutate := range map[string]func(*Config){
		"recipe": func(c *Config) { c.Recipe = "mutex" },
		"nodes":  func(c *Config) { c.Given = map[string]bool{"nodes": true} },
	} {
		cfg := base("pause-holder")
		mutate(&cfg)
		cfg, err := checked(cfg)
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != flag {
			t.Errorf("%s: got %v, want a usage error naming --%s", flag, err, flag)
		}
	}
}

// --apiservers is the kubernetes backend's own: 3 makes six server nodes
// (3 etcd members, 3 API servers), the default (also --nodes's default 3,
// as compare sets it) keeps one API server, and a bad value or the flag
// on another backend is refused before anything is created, naming it.
func TestValidateKubernetesAPIServers(t *testing.T) {
	cfg := memoryConfig(t, "none", "pause-holder")
	cfg.Backend, cfg.Recipe, cfg.Cluster, cfg.Nodes = "kubernetes", "", registry.ClusterDocker, 3
	cfg.LeaseTTL = 2 * time.Second
	for v, want := range map[string]int{"": 4, "1": 4, "3": 6} {
		c := cfg
		c.Options = map[string]string{"apiservers": v}
		if _, err := checked(c); err != nil {
			t.Errorf("--apiservers %q refused: %v", v, err)
		}
		if n, err := c.Servers(); err != nil || n != want {
			t.Errorf("--apiservers %q: %d server nodes, %v; want %d", v, n, err, want)
		}
	}
	for _, tc := range []struct{ backend, value, says string }{
		{"kubernetes", "2", "accepted: 1, 3"},
		{"kubernetes", "many", "e.g. --apiservers 3"},
		{"etcd", "3", "--backend kubernetes"},
	} {
		c := cfg
		c.Backend, c.Options = tc.backend, map[string]string{"apiservers": tc.value}
		_, err := checked(c)
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != "apiservers" || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("--backend %s --apiservers %s: got %v, want a usage error naming --apiservers that says %q", tc.backend, tc.value, err, tc.says)
		}
	}
}
