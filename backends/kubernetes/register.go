package kubernetes

import (
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/kubernetes/clientconf"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// Recipes is the backend's one recipe: client-go's leader election.
var Recipes = []string{"leaderelection"}

// MinTTL is the shortest --lease-ttl: below it RetryPeriod would be
// shorter than a round trip to the API server under load, and client-go
// would spend the lease retrying.
const MinTTL = time.Second

// AgentProgramName is the program the built-in clients run in
// (cmd/check-kubernetes): the check binary does not link client-go.
const AgentProgramName = "check-kubernetes"

func init() {
	registry.Register(registry.Info{
		Name: "kubernetes", Server: "Kubernetes", VersionQuery: VersionQuery, Recipes: Recipes,
		Clusters: []registry.Cluster{registry.ClusterDocker},
		MinTTL:   MinTTL,
		Builds: map[string]string{registry.DefaultVersion: fmt.Sprintf("kube-apiserver %s built from the Go module proxy on first use (cached), in front of etcd %s",
			images.KubeAPIServerVersion, images.EtcdImageVersion)},
		FixedNodes: fmt.Sprintf("backend kubernetes runs %d etcd members and one kube-apiserver, or three with --%s 3; drop the flag (e.g. --%s 3 for three API servers in front of the same etcd)", EtcdMembers, APIServersFlag, APIServersFlag),
		Flags: []usage.Flag{{Name: APIServersFlag, Check: CheckAPIServers,
			Usage: fmt.Sprintf("how many kube-apiservers run in front of the same %d-member etcd: 1 (the default) or 3; client process p speaks to API server p mod their count", EtcdMembers)}},
		NoClockFaults: "client-go's leader election judges a Lease's expiry by its own observation time on the monotonic clock, in a static Go binary " +
			"(libfaketime cannot be preloaded into it), and the API server and etcd are static Go binaries too: no clock fault reaches any judgement of expiry here",
		NoExpiredGrants: "client-go takes a Lease over only by an Update conditional on the resourceVersion it read, and the token is read back showing this client as holder: a grant on an expired lease cannot be told from a fresh one",
		AllEndpoints: "a built-in client already speaks to one API server (process p to API server p mod their count: client-go's rest.Config has one Host), " +
			"and the etcd members behind them are not the lock service's endpoints",
		NewDB: func(s registry.Setup) (backends.DB, int, error) {
			db, err := newDBFor(s.TestID, s.LeaseTTL, s.Options)
			if err != nil {
				return nil, 0, err
			}
			db.Client = s.Client
			return db, db.Servers(), nil
		},
		Notes: func(s registry.Setup) []string {
			var notes []string
			if s.Client != "" {
				notes = append(notes, clientNote(s.Client))
			} else {
				notes = append(notes, clientconf.TimingFor(s.LeaseTTL).String())
			}
			if n, err := ParseAPIServers(s.Options[APIServersFlag]); err == nil {
				if note := apiserversNote(n, s.Client); note != "" {
					notes = append(notes, note)
				}
			}
			return notes
		},
		// client-go is linked into the agent program alone, not into the
		// check binary.
		CompileLast: true,
		Agent: &registry.AgentProgram{Name: AgentProgramName, Package: "./cmd/" + AgentProgramName,
			What: "the kubernetes agent, client-go's leader election"},
	})
}
