package nats

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// Name is the backend's name: --backend nats.
const Name = "nats"

// SyncFlag is the backend's flag for JetStream's sync_interval, named as
// nats-server names it.
const SyncFlag = "nats-sync-interval"

// The sync settings.
const (
	// SyncDefault is the server's own: JetStream fsyncs its files every
	// 2 minutes, and acknowledges writes before they reach the disk.
	SyncDefault = "default"
	// SyncAlways fsyncs every write before it is acknowledged.
	SyncAlways = "always"
)

// Syncs lists the accepted sync settings, the default first.
var Syncs = []string{SyncDefault, SyncAlways}

// CheckSync says whether s is an accepted sync setting ("" is the
// default).
func CheckSync(s string) error {
	switch s {
	case "", SyncDefault, SyncAlways:
		return nil
	}
	return fmt.Errorf("unknown JetStream sync_interval %q (accepted: %s)", s, strings.Join(Syncs, ", "))
}

// MinTTL is the shortest --lease-ttl: a stream's max age must be at least
// 100 ms, and a lease shorter than a second would be spent in the
// renewals' round trips under a fault.
const MinTTL = time.Second

func init() {
	registry.Register(registry.Info{
		Name: Name, DataDir: DataDir, DataLog: "*.blk", Server: "nats-server", VersionQuery: VersionQuery, Recipes: Recipes,
		Clusters: []registry.Cluster{registry.ClusterDocker},
		MinTTL:   MinTTL,
		Versions: []string{VersionModule, VersionDebian},
		Builds: map[string]string{VersionModule: "nats-server " + ServerVersion + " built from the Go module proxy on first use (cached)",
			VersionDebian: "Debian's nats-server package (" + DebianVersion + "), which has no sync_interval"},
		Releases: &registry.Releases{What: ReleasesAccepted,
			Check: func(v string) error { _, err := Release(v); return err },
			Served: func(ctx context.Context, v string) (string, error) {
				r, err := Release(v)
				if err != nil {
					return "", err
				}
				return r.ProxyAnswer(ctx)
			}},
		Nodes: []int{3, 5},
		NodesWhy: "fencecheck sets nats-server up as a JetStream cluster (cluster routes between the servers, the bucket replicated on each); " +
			"one server would be standalone JetStream, which this backend does not configure",
		NoClockFaults: "nats-server is a Go binary, whose runtime reads the clock itself rather than through libc (the 2.15 build is static; Debian's 2.9 links libc, but not for its clock): libfaketime cannot move it, so a clock fault would not reach " +
			"the servers that expire the bucket's keys; the clock faults run on redis, postgres and zookeeper",
		NoExpiredGrants: "the lease begins with the grant: Create writes the key, and the bucket's TTL runs from that write, so there is no earlier lease that could have expired",
		OneEndpoint:     true, // every server routes a request to the bucket's stream leader
		Flags: []usage.Flag{{Name: SyncFlag, Check: CheckSync,
			Usage: "JetStream's sync_interval on the nats servers: default (fsync every 2 minutes, writes acknowledged before they reach the disk) or always (fsync before every acknowledgement)"}},
		// 2.15 is compiled on the host (the core image is all it needs);
		// 2.9 is Debian's package, in the node image.
		CoreImage: func(s registry.Setup) bool { return s.ServerVersion != VersionDebian },
		NewDB: func(s registry.Setup) (backends.DB, int, error) {
			if err := CheckSync(s.Options[SyncFlag]); err != nil {
				return nil, 0, usage.Errorf(SyncFlag, "%v", err)
			}
			if s.ServerVersion == VersionDebian && s.Options[SyncFlag] == SyncAlways {
				return nil, 0, usage.Errorf(SyncFlag, "nats-server %s has no sync_interval (it refuses the field: unknown field \"sync_interval\"; it came with 2.10): "+
					"drop --server-version %s or the flag", DebianVersion, VersionDebian)
			}
			return &DB{LeaseTTL: s.LeaseTTL, Sync: s.Options[SyncFlag], Version: s.ServerVersion}, s.Nodes, nil
		},
		Notes: func(s registry.Setup) []string {
			note := fmt.Sprintf("the lease is the bucket %s's TTL (%s), renewed by Update every %s", Bucket, s.LeaseTTL, (s.LeaseTTL / 3).Round(time.Millisecond))
			if s.Client != "" {
				note = fmt.Sprintf("the bucket %s has the lease as its TTL (%s); the client binds to it by name", Bucket, s.LeaseTTL)
			}
			return []string{note}
		},
		OpenClient: func(ctx context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			return NewClient(ctx, spec.Endpoints, spec.Recipe, spec.LeaseTTL, spec.Process, storage)
		},
		KnownBugs: knownBugs,
		Durability: &registry.Durability{
			Recipe: Recipes[0], Fault: "power-loss-all",
			Why:  "a stream's replicas keep its writes, so a coordinated power failure of every server, as Jepsen ran against NATS 2.12.1, is what can take one",
			Safe: registry.Settings{Name: "safe", Options: map[string]string{SyncFlag: SyncAlways}, What: "sync_interval always: fsync before every acknowledgement"},
			Relaxed: []registry.Settings{{Name: "relaxed", Options: map[string]string{SyncFlag: SyncDefault},
				What: "nats-server's default: fsync every 2 minutes, writes acknowledged before they reach the disk"}},
		},
	})
}
