package zookeeper

import (
	"context"
	"fmt"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/usage"
)

func init() {
	registry.Register(registry.Info{
		NoExpiredGrants: "a session that expires while its client waits cannot learn that its znode is lowest (every request on it fails), so ZooKeeper never grants the lock on an expired session",
		DataDir:         DataDir,
		Name:            "zookeeper", Server: "ZooKeeper", VersionQuery: VersionQuery, Recipes: []string{"lock"}, Clusters: []registry.Cluster{registry.ClusterDocker},
		MinTTL: MinTTL, Builds: map[string]string{registry.DefaultVersion: "Debian's zookeeper package (3.8)"}, Nodes: []int{3, 5},
		NodesWhy: "fencecheck sets ZooKeeper up as an ensemble (server.N lines, each node's myid, a leader elected by a quorum); " +
			"one server would be ZooKeeper's standalone mode, which has no leader or quorum and which this backend does not configure",
		OneEndpoint: true, // every server of the ensemble serves sessions and forwards writes to the leader
		Flags:       []usage.Flag{ForceSyncFlag},
		NewDB: func(s registry.Setup) (backends.DB, int, error) {
			return &DB{TTL: s.LeaseTTL, NoForceSync: s.Options[ForceSyncFlag.Name] == "no"}, s.Nodes, nil
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			return NewClient(spec.Endpoints, spec.LeaseTTL, storage)
		},
		Durability: &registry.Durability{
			Recipe: "lock", Fault: "power-loss-all",
			Why:  "a quorum of servers keeps every committed transaction, so only a cut of every server at once can take one",
			Safe: registry.Settings{Name: "safe", Options: map[string]string{ForceSyncFlag.Name: "yes"}, What: "ZooKeeper's default: the transaction log fsynced before a transaction is acknowledged"},
			Relaxed: []registry.Settings{{Name: "relaxed", Options: map[string]string{ForceSyncFlag.Name: "no"},
				What: "forceSync=no: transactions acknowledged once written, before the fsync"}},
		},
	})
}

// ForceSyncFlag is ZooKeeper's forceSync: with no, a server acknowledges
// a transaction once its log is written, before it is fsynced.
// ZooKeeper's default, and ours, is yes.
var ForceSyncFlag = usage.Flag{Name: "zookeeper-force-sync",
	Usage: "ZooKeeper's forceSync: no acknowledges transactions before their log is fsynced; yes, ZooKeeper's default",
	Check: func(v string) error {
		switch v {
		case "", "yes", "no":
			return nil
		}
		return fmt.Errorf("%q is not yes or no (ZooKeeper's forceSync)", v)
	}}
