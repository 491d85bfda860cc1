package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/memory"
)

func init() {
	register(BackendInfo{
		Name: "memory", Recipes: []string{"lease"}, Clusters: []string{"inprocess", "docker"},
		MinTTL: 50 * time.Millisecond,
		NewDB: func(cfg *Config, _ string) (backends.DB, int, error) {
			return &memory.DB{TTL: cfg.LeaseTTL}, 1, nil
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			if len(spec.Endpoints) != 1 {
				return nil, fmt.Errorf("the memory backend needs one lockd endpoint, got %v", spec.Endpoints)
			}
			return memory.NewClient(&memory.Remote{URL: spec.Endpoints[0], Client: httpClient()}, storage, spec.LeaseTTL, nil), nil
		},
	})
}
