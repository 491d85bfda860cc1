package kubernetes

import (
	"context"
	"errors"
	"fmt"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/images"
)

func init() {
	registry.Register(registry.Info{
		Name: "kubernetes", Server: "Kubernetes", VersionQuery: VersionQuery, Recipes: Recipes,
		Clusters: []registry.Cluster{registry.ClusterDocker},
		MinTTL:   MinTTL,
		Builds: map[string]string{registry.DefaultVersion: fmt.Sprintf("kube-apiserver %s built from the Go module proxy on first use (cached), in front of etcd %s",
			images.KubeAPIServerVersion, images.EtcdImageVersion)},
		FixedNodes: fmt.Sprintf("backend kubernetes runs %d etcd members and one kube-apiserver (%d server nodes); drop the flag", EtcdMembers, EtcdMembers+1),
		NoClockFaults: "client-go's leader election judges a Lease's expiry by its own observation time on the monotonic clock, in a static Go binary " +
			"(libfaketime cannot be preloaded into it), and the API server and etcd are static Go binaries too: no clock fault reaches any judgement of expiry here",
		NoExpiredGrants: "client-go takes a Lease over only by an Update conditional on the resourceVersion it read, and the token is read back showing this client as holder: a grant on an expired lease cannot be told from a fresh one",
		AllEndpoints:    "there is one API server; the etcd members behind it are not the lock service's endpoints",
		NewDB: func(s registry.Setup) (backends.DB, int, error) {
			db := NewDB(s.TestID, s.LeaseTTL)
			db.Client = s.Client
			return db, EtcdMembers + 1, nil
		},
		Notes: func(s registry.Setup) []string {
			if s.Client != "" {
				return []string{clientNote(s.Client)}
			}
			return []string{TimingFor(s.LeaseTTL).String()}
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			if len(spec.Endpoints) != 1 {
				return nil, errors.New("kubernetes: the client needs the one API server's URL")
			}
			return NewClient(spec.Endpoints[0], spec.ServiceSecret, spec.Process, spec.LeaseTTL, storage)
		},
	})
}
