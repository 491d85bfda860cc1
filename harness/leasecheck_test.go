package harness

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/models"
)

// --lease-check and --client-endpoints are refused, naming the reason,
// where they mean nothing, before anything is created.
func TestLeaseCheckAndClientEndpointsRefusals(t *testing.T) {
	for _, tc := range []struct {
		name    string
		backend string
		set     func(*Config)
		flag    string
		want    string // "" when accepted
	}{
		{"lease check none", "memory", func(c *Config) { c.LeaseCheck = "none" }, "", ""},
		{"lease check bad", "memory", func(c *Config) { c.LeaseCheck = "some" }, "lease-check", "accepted: all, none"},
		{"one endpoint in process", "memory", func(c *Config) { c.ClientEndpoints = "one" }, "client-endpoints", "one lock server"},
		{"one endpoint postgres", "postgres", func(c *Config) { c.ClientEndpoints = "one"; c.Cluster = "docker" }, "client-endpoints", "PostgreSQL runs one server"},
		{"one endpoint redis", "redis", func(c *Config) { c.ClientEndpoints = "one"; c.Cluster = "docker" }, "client-endpoints", "majority"},
		{"one endpoint etcd", "etcd", func(c *Config) { c.ClientEndpoints = "one"; c.Cluster = "docker"; c.LeaseTTL = 2e9; c.Nodes = 3 }, "", ""},
		{"one endpoint zookeeper", "zookeeper", func(c *Config) { c.ClientEndpoints = "one"; c.Cluster = "docker"; c.LeaseTTL = 2e9; c.Nodes = 3 }, "", ""},
		{"endpoints bad", "etcd", func(c *Config) { c.ClientEndpoints = "two"; c.Cluster = "docker"; c.LeaseTTL = 2e9; c.Nodes = 3 }, "client-endpoints", "accepted: all, one"},
	} {
		cfg := memoryConfig(t, "none", "none")
		cfg.Backend = tc.backend
		tc.set(&cfg)
		cfg, err := checked(cfg)
		var ue *usage.Error
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.As(err, &ue) || ue.Flag != tc.flag || !strings.Contains(ue.Msg, tc.want)):
			t.Errorf("%s: %v, want --%s saying %q", tc.name, err, tc.flag, tc.want)
		}
	}
}

// Process p speaks to server p mod n alone, as Jepsen's clients did.
func TestEndpointsOfBindsProcessToOneServer(t *testing.T) {
	eps := []string{"n1", "n2", "n3", "n4", "n5"}
	for p, want := range map[int]string{0: "n1", 4: "n5", 5: "n1", 12: "n3"} {
		if got := EndpointsOf(ClientEndpointsOne, eps, p); !slices.Equal(got, []string{want}) {
			t.Errorf("process %d: %v, want %s", p, got, want)
		}
	}
	if got := EndpointsOf(ClientEndpointsAll, eps, 3); !slices.Equal(got, eps) {
		t.Errorf("all: %v", got)
	}
}

// A trusting client under random pauses is still safe with fencing: its
// stale reads and writes reach the storage and are refused there.
func TestTrustingClientIsSafeWithFencing(t *testing.T) {
	base := memoryConfig(t, "all", "pause")
	base.LeaseCheck = "none"
	for i, v := range runSeeds(t, base, 3) {
		if v != models.Valid {
			t.Errorf("seed %d: %s, want valid", i, v)
		}
	}
}
