package harness

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/etcd"
	"github.com/fencecheck/fencecheck/backends/fenced"
)

func init() {
	register(BackendInfo{
		Name: "etcd", Recipes: etcd.Recipes, Storages: []string{"etcd"}, Clusters: []string{"docker"},
		MinTTL: 100 * time.Millisecond, Versions: []string{"3.6", "3.4"}, Nodes: []int{3, 5},
		NewDB: func(cfg *Config, testID string) (backends.DB, int, error) {
			return &etcd.DB{Version: cfg.ServerVersion, TestID: testID}, cfg.Nodes, nil
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			return etcd.NewRecipeClient(spec.Endpoints, spec.Recipe, spec.LeaseTTL, storage)
		},
	})
}
