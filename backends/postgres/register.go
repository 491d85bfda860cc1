package postgres

import (
	"context"
	"errors"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/engine"
)

func init() {
	registry.Register(registry.Info{
		NoExpiredGrants: "the lease recipe grants in one UPDATE that takes only a free or expired row, and an advisory lock belongs to the open connection: neither can be granted on an expired lease",
		DataDir:         DataDir,
		Name:            "postgres", Server: "PostgreSQL", VersionQuery: VersionQuery, Recipes: Recipes, Clusters: []registry.Cluster{registry.ClusterDocker},
		MinTTL: MinTTL, Builds: map[string]string{registry.DefaultVersion: "Debian's postgresql package (15)"},
		AllEndpoints: "PostgreSQL runs one server, so every client already speaks to that one",
		// The server's socket and its lock file live in SocketDir; a stale
		// lock file would outlast the server a warm cluster's next run
		// replaces.
		RunDirs: []string{SocketDir},
		NewDB: func(s registry.Setup) (backends.DB, int, error) {
			return &DB{Recipe: s.Recipe, LeaseTTL: s.LeaseTTL}, 1, nil
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			return OpenClient(spec, storage)
		},
	})
	// A row in PostgreSQL, fenced in SQL: a shared storage every backend
	// can guard.
	registry.RegisterStorage(registry.StorageKind{
		Name: "postgres",
		Start: func(ctx context.Context, c *engine.Cluster, s registry.Setup) (string, string, error) {
			return StartStorage(ctx, c, s.LeaseTTL)
		},
		Open: func(_ context.Context, spec backends.ClientSpec, mode fenced.Mode) (fenced.Storage, error) {
			if spec.StorageURL == "" || spec.Secret == "" {
				return nil, errors.New("storage postgres needs its URL and password")
			}
			return NewStorage(spec.StorageURL, spec.Secret, mode)
		},
		Client: clientStorage,
	})
}
