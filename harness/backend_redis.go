package harness

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/redis"
)

func init() {
	register(BackendInfo{
		Name: "redis", Recipes: redis.Recipes, Clusters: []string{"docker"},
		MinTTL: 100 * time.Millisecond,
		NewDB: func(cfg *Config, _ string) (backends.DB, int, error) {
			servers, err := redis.Servers(cfg.Recipe)
			if err != nil {
				return nil, 0, usage("recipe", "%v", err)
			}
			return &redis.DB{Recipe: cfg.Recipe, Persistence: cfg.RedisPersistence}, servers, nil
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			return redis.NewClient(spec.Endpoints, spec.Recipe, spec.LeaseTTL, storage)
		},
	})
}
