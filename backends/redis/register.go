package redis

import (
	"context"
	"io"
	"time"

	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// PersistenceFlag is the flag that says what the servers keep on disk.
const PersistenceFlag = "redis-persistence"

func init() {
	registry.Register(registry.Info{
		NoExpiredGrants: "the lease begins with the grant (SET … PX): there is no earlier lease that could have expired; a holder whose key expires later is what the fence and the checker see",
		DataDir:         DataDir,
		Name:            "redis", Server: "Redis", VersionQuery: VersionQuery, Recipes: Recipes, Clusters: []registry.Cluster{registry.ClusterDocker},
		ServerImage: "the official redis image's layout (redis:7.2 and its kin): its entrypoint runs the command redis-server with fencecheck's arguments, " +
			"data in " + ImageDataDir + ", port 6379",
		LocalServerImage: &registry.LocalServerImage{
			Build: func(ctx context.Context, cli *client.Client, _ string, progress io.Writer) (string, error) {
				return images.BuildRedisImage(ctx, cli, progress)
			}},
		MinTTL:       100 * time.Millisecond,
		Builds:       map[string]string{registry.DefaultVersion: "Debian's redis-server package (7.0)"},
		AllEndpoints: "Redis runs one server for setnx and setnx-incr, and redlock needs a majority of its 5 independent masters, so a client bound to one could never lock",
		FixedNodes:   "backend redis runs as many servers as its --recipe needs (one for setnx and setnx-incr, five for redlock); drop the flag (a --client run may ask for 1, 3 or 5 masters with --nodes)",
		ClientNodes:  []int{1, 3, 5},
		Flags: []usage.Flag{{Name: PersistenceFlag, Check: CheckPersistence,
			Usage: "Redis servers' persistence: default (the server's own), none, aof-everysec, aof-always"}},
		NewDB: func(s registry.Setup) (backends.DB, int, error) {
			if s.ClientServers > 0 {
				// A --client program is the recipe: it gets the masters it
				// asked for (a Redlock client, five).
				return &DB{Masters: s.ClientServers, Persistence: s.Options[PersistenceFlag]}, s.ClientServers, nil
			}
			servers, err := Servers(s.Recipe)
			if err != nil {
				return nil, 0, usage.Errorf("recipe", "%v", err)
			}
			return &DB{Recipe: s.Recipe, Persistence: s.Options[PersistenceFlag]}, servers, nil
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			return NewClient(spec.Endpoints, spec.Recipe, spec.LeaseTTL, storage)
		},
	})
}
