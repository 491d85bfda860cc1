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
		// The AOF: appendonlydir/appendonly.aof.N.incr.aof (Redis 7), or
		// appendonly.aof.
		DataLog: "*.aof",
		Name:    "redis", Server: "Redis", VersionQuery: VersionQuery, Recipes: Recipes, Clusters: []registry.Cluster{registry.ClusterDocker},
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
			Usage: "Redis servers' persistence: default (the server's own), none, aof-everysec, aof-always"},
			{Name: TopologyFlag, Check: CheckTopology,
				Usage: "how the Redis servers are deployed: single (independent masters, nothing replicates; the default) or sentinel (a master and two replicas on n1-n3 with three Sentinels, quorum 2, that fail over; recipes setnx, setnx-incr and setnx-incr-wait)"},
			{Name: DownAfterFlag, Check: checkMillis,
				Usage: "with --redis-topology sentinel: Sentinel's down-after-milliseconds, how long the master stays silent before a Sentinel calls it down (default 1s)"},
			{Name: FailoverTimeoutFlag, Check: checkMillis,
				Usage: "with --redis-topology sentinel: Sentinel's failover-timeout (default 3s)"},
			{Name: MinReplicasFlag, Check: CheckMinReplicas,
				Usage: "with --redis-topology sentinel: min-replicas-to-write on every server, the master refuses writes unless this many replicas acknowledged within 2 s (default 0: off)"},
		},
		NewDB: func(s registry.Setup) (backends.DB, int, error) {
			if s.Options[TopologyFlag] == Sentinel {
				return newSentinelDB(s)
			}
			for _, f := range []string{DownAfterFlag, FailoverTimeoutFlag, MinReplicasFlag} {
				if s.Options[f] != "" {
					return nil, 0, usage.Errorf(f, "it sets the sentinel topology's servers: add --%s %s, or drop it", TopologyFlag, Sentinel)
				}
			}
			if s.ClientServers > 0 {
				// A --client program is the recipe: it gets the masters it
				// asked for (a Redlock client, five).
				return &DB{Masters: s.ClientServers, Persistence: s.Options[PersistenceFlag]}, s.ClientServers, nil
			}
			servers, err := Servers(s.Recipe)
			if err != nil {
				return nil, 0, usage.Errorf("recipe", "%v", err)
			}
			if s.Recipe == SetNXIncrWait {
				return nil, 0, usage.Errorf("recipe", "recipe %s waits for a replica to acknowledge each grant, and the single topology has none: add --%s %s",
					SetNXIncrWait, TopologyFlag, Sentinel)
			}
			return &DB{Recipe: s.Recipe, Persistence: s.Options[PersistenceFlag]}, servers, nil
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			return NewClient(spec.Endpoints, spec.Recipe, spec.LeaseTTL, storage)
		},
		Durability: &registry.Durability{
			Recipe: SetNXIncr, Fault: "power-loss",
			Why:  "one master holds the lock key and the token counter, so one server's power cut is the whole service's",
			Safe: registry.Settings{Name: "safe", Options: map[string]string{PersistenceFlag: "aof-always"}, What: "the append-only file fsynced before every reply"},
			Relaxed: []registry.Settings{{Name: "relaxed", Options: map[string]string{PersistenceFlag: "aof-everysec"},
				What: "the append-only file fsynced once a second: Redis documents up to a second of writes lost"}},
		},
		Deployments: []registry.Deployment{
			{Settings: registry.Settings{Name: Single, Options: map[string]string{TopologyFlag: Single},
				What: "one master, nothing replicated"},
				Recipes: []string{SetNX, SetNXIncr}, Faults: []string{"pause-holder", "kill-leader"},
				Why: "one master has no replica to fail over to or cut off: a paused holder, and the master killed and restarted with what it kept on disk"},
			{Settings: registry.Settings{Name: "redlock", Options: map[string]string{TopologyFlag: Single},
				What: "five independent masters, a quorum of three"},
				Recipes: []string{Redlock}, Faults: []string{"pause-holder", "kill"},
				Why: "Redlock's masters are independent, none leads: a paused holder, and one master of five killed and restarted with what it kept on disk"},
			{Settings: registry.Settings{Name: Sentinel, Options: map[string]string{TopologyFlag: Sentinel},
				What: "a master and two replicas, three Sentinels that fail over"},
				Recipes: []string{SetNX, SetNXIncr, SetNXIncrWait},
				Faults:  []string{"pause-holder", "kill-leader", "pause-leader", "partition-primary", "partition-primary-clients"},
				Why:     "every fault that makes Sentinel promote a replica, and a paused holder with no server fault"},
		},
	})
}

// newSentinelDB is the sentinel topology's DB: three servers, whatever
// --nodes a --client run gave; Redlock has no place in it (its masters are
// independent by design).
func newSentinelDB(s registry.Setup) (backends.DB, int, error) {
	if s.Recipe == Redlock {
		return nil, 0, usage.Errorf(TopologyFlag, "recipe %s runs on five independent masters, not on a replicated master: use --recipe %s, %s or %s with --%s %s",
			Redlock, SetNX, SetNXIncr, SetNXIncrWait, TopologyFlag, Sentinel)
	}
	if s.Client == "" {
		if _, err := Servers(s.Recipe); err != nil {
			return nil, 0, usage.Errorf("recipe", "%v", err)
		}
	} else if s.ClientServers > 0 && s.ClientServers != SentinelServers {
		return nil, 0, usage.Errorf("nodes", "the sentinel topology runs %d servers (a master and two replicas): drop --nodes or give %d", SentinelServers, SentinelServers)
	}
	return &DB{Recipe: s.Recipe, Persistence: s.Options[PersistenceFlag], Topology: Sentinel, Sentinel: sentinelSettings(s.Options)}, SentinelServers, nil
}
