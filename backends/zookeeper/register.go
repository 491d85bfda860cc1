package zookeeper

import (
	"context"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
)

func init() {
	registry.Register(registry.Info{
		NoExpiredGrants: "a session that expires while its client waits cannot learn that its znode is lowest (every request on it fails), so ZooKeeper never grants the lock on an expired session",
		DataDir:         DataDir,
		Name:            "zookeeper", Server: "ZooKeeper", VersionQuery: VersionQuery, Recipes: []string{"lock"}, Clusters: []registry.Cluster{registry.ClusterDocker},
		MinTTL: MinTTL, Builds: map[string]string{registry.DefaultVersion: "Debian's zookeeper package (3.8)"}, Nodes: []int{3, 5},
		OneEndpoint: true, // every server of the ensemble serves sessions and forwards writes to the leader
		NewDB: func(s registry.Setup) (backends.DB, int, error) {
			return &DB{TTL: s.LeaseTTL}, s.Nodes, nil
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			return NewClient(spec.Endpoints, spec.LeaseTTL, storage)
		},
	})
}
