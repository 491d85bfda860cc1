package harness

import (
	"errors"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/usage"
)

// Servers is what the backend runs, which --concurrency's <k>n and
// results.json's nodes count: memory and postgres one, Redis its recipe's,
// etcd and ZooKeeper --nodes.
func TestServersCountsWhatTheBackendRuns(t *testing.T) {
	for _, c := range []struct {
		backend, recipe string
		nodes, want     int
	}{
		{"memory", "", 3, 1}, {"postgres", "", 3, 1}, {"redis", "setnx", 3, 1}, {"redis", "redlock", 3, 5},
		{"etcd", "", 3, 3}, {"etcd", "", 5, 5}, {"zookeeper", "", 5, 5},
	} {
		cfg := Config{Backend: c.backend, Recipe: c.recipe, Nodes: c.nodes, Fencing: "none", LeaseTTL: time.Second}
		n, err := cfg.Servers()
		if err != nil || n != c.want {
			t.Errorf("%s %s --nodes %d: %d servers, %v; want %d", c.backend, c.recipe, c.nodes, n, err, c.want)
		}
		if cfg.Recipe != c.recipe {
			t.Errorf("Servers changed the config (recipe %q)", cfg.Recipe)
		}
	}
	var ue *usage.Error
	if _, err := (&Config{Backend: "nosuch"}).Servers(); !errors.As(err, &ue) || ue.Flag != "backend" {
		t.Errorf("unknown backend: %v, want a --backend usage error", err)
	}
}
