package harness

import (
	"context"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/zookeeper"
)

func init() {
	register(BackendInfo{
		Name: "zookeeper", Recipes: []string{"lock"}, Clusters: []string{"docker"},
		MinTTL: zookeeper.MinTTL, Nodes: []int{3, 5},
		NewDB: func(cfg *Config, _ string) (backends.DB, int, error) {
			return &zookeeper.DB{TTL: cfg.LeaseTTL}, cfg.Nodes, nil
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			return zookeeper.NewClient(spec.Endpoints, spec.LeaseTTL, storage)
		},
	})
}
