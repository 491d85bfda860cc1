package harness

import (
	"context"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/postgres"
)

func init() {
	register(BackendInfo{
		Name: "postgres", Recipes: postgres.Recipes, Clusters: []string{"docker"},
		MinTTL: postgres.MinTTL,
		NewDB: func(cfg *Config, _ string) (backends.DB, int, error) {
			return &postgres.DB{Recipe: cfg.Recipe, LeaseTTL: cfg.LeaseTTL}, 1, nil
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			return postgres.OpenClient(spec, storage)
		},
	})
}
