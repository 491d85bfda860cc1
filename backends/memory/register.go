package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/words"
)

func init() {
	registry.Register(registry.Info{
		NoExpiredGrants: "lockd grants only a live lease: a grant on an expired lease cannot happen",
		Name:            "memory", Server: "fencecheck", VersionQuery: VersionQuery, Recipes: []string{"lease"}, Clusters: []registry.Cluster{registry.ClusterInProcess, registry.ClusterDocker},
		AllEndpoints: "the memory backend has one lock server (lockd), so every client already speaks to that one",
		NoClockFaults: "the memory backend's server is fencecheck itself, a static Go binary that libfaketime cannot be preloaded into, " +
			"and it times leases on the monotonic clock; the clock faults run on redis, postgres and zookeeper",
		ClosedToClients: "the memory backend runs its own in-process lock service, which no outside client can speak to",
		MinTTL:          50 * time.Millisecond,
		Builds:          map[string]string{registry.DefaultVersion: "the fencecheck build that runs the test"},
		NewDB: func(s registry.Setup) (backends.DB, int, error) {
			return &DB{TTL: s.LeaseTTL}, 1, nil
		},
		InProcess: func(s registry.Setup) registry.InProcess {
			ip := NewInProcess(s.LeaseTTL, s.Fencing)
			if s.NoNetworkDelay {
				ip.Delay = 0
			}
			return ip
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			if len(spec.Endpoints) != 1 {
				return nil, fmt.Errorf("the memory backend needs one lockd endpoint, got %s", gotEndpoints(spec.Endpoints))
			}
			return NewClient(&Remote{URL: spec.Endpoints[0], Client: registry.HTTPClient()}, storage, spec.LeaseTTL, nil), nil
		},
	})
}

// gotEndpoints names the endpoints given, for a message.
func gotEndpoints(endpoints []string) string {
	if len(endpoints) == 0 {
		return "none"
	}
	return fmt.Sprintf("%d: %s", len(endpoints), words.List(endpoints))
}
