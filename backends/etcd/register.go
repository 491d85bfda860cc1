package etcd

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
)

func init() {
	registry.Register(registry.Info{
		DataDir: DataDir,
		// member/wal/<seq>-<index>.wal, fdatasynced before an entry is
		// acknowledged.
		DataLog: "*.wal",
		Name:    "etcd", Server: "etcd", VersionQuery: VersionQuery, Recipes: Recipes, Storages: []string{"etcd"}, Clusters: []registry.Cluster{registry.ClusterDocker},
		NoClockFaults: "etcd is a static Go binary: libfaketime cannot be preloaded into it, and etcd times its leases on the monotonic clock, " +
			"which a wall-clock jump does not move, so a clock fault would change nothing here; the clock faults run on redis, postgres and zookeeper",
		ExpiredGrant:     expiredGrant,
		LocalServerImage: &registry.LocalServerImage{Versions: images.EtcdModuleVersions(), Build: images.BuildEtcdImage},
		ServerImage: "the official etcd image's layout (gcr.io/etcd-development/etcd, quay.io/coreos/etcd): its own CMD runs etcd, " +
			"configured by ETCD_* variables, data under " + ImageDataDir + ", client port 2379, peer port 2380; the image needs no shell",
		OneEndpoint: true, // every member serves the whole keyspace (a follower forwards to the leader)
		MinTTL:      100 * time.Millisecond, Versions: []string{"3.6", "3.4", "3.5", "3.7"},
		Builds: map[string]string{"3.6": "etcd 3.6 built from the Go module proxy into the node image", "3.4": "Debian's etcd-server package (3.4.23)",
			"3.5": "etcd 3.5 built from the Go module proxy on first use (cached)", "3.7": "etcd 3.7 built from the Go module proxy on first use (cached)"},
		Releases: &registry.Releases{What: images.EtcdReleasesAccepted,
			Check: func(v string) error { _, err := images.EtcdRelease(v); return err },
			Served: func(ctx context.Context, v string) (string, error) {
				r, err := images.EtcdRelease(v)
				if err != nil {
					return "", err
				}
				return r.ProxyAnswer(ctx)
			},
			// TestDockerEtcdExactReleaseOnOneMember's.
			Prepared: []string{"3.5.4"}},
		// One member is a cluster of one, as etcd's own single-node bugs
		// (14370) need; the faults that need more servers say so.
		Nodes: []int{1, 3, 5},
		// A --client program may keep the resource in etcd as well,
		// behind its own guarded transaction.
		ClientStorages: map[string]*registry.ClientStorage{"etcd": clientStorage},
		// 3.5 to 3.7 are compiled on the host; only 3.4 is Debian's.
		CoreImage: func(s registry.Setup) bool { return s.ServerVersion != "3.4" },
		Flags:     []usage.Flag{UnsafeNoFsyncFlag, CompactEveryFlag, DefragEveryFlag},
		NewDB: func(s registry.Setup) (backends.DB, int, error) {
			noFsync := s.Options[UnsafeNoFsyncFlag.Name] == "true"
			if noFsync && s.ServerVersion == "3.4" {
				return nil, 0, usage.Errorf(UnsafeNoFsyncFlag.Name, "etcd 3.4 has no --unsafe-no-fsync (it came with 3.5): drop --server-version 3.4 or the flag")
			}
			if s.Failpoints {
				if err := hasFailpointBuild(s.ServerVersion); err != nil {
					return nil, 0, usage.Errorf("failpoint", "%v", err)
				}
			}
			db := &DB{Version: s.ServerVersion, TestID: s.TestID, UnsafeNoFsync: noFsync, Failpoints: s.Failpoints}
			var err error
			if db.CompactEvery, err = parseEvery(s.Options[CompactEveryFlag.Name]); err != nil {
				return nil, 0, usage.Errorf(CompactEveryFlag.Name, "%v", err)
			}
			if db.DefragEvery, err = parseEvery(s.Options[DefragEveryFlag.Name]); err != nil {
				return nil, 0, usage.Errorf(DefragEveryFlag.Name, "%v", err)
			}
			return db, s.Nodes, nil
		},
		Notes: func(s registry.Setup) []string {
			if secs, clamped := TTLSeconds(s.LeaseTTL); clamped {
				return []string{fmt.Sprintf("etcd grants leases in whole seconds of at least %s: --lease-ttl %s is clamped to %ds", MinTTL, s.LeaseTTL, secs)}
			}
			return nil
		},
		OpenClient: func(_ context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
			return NewRecipeClient(spec.Endpoints, spec.Recipe, spec.LeaseTTL, storage)
		},
		Failpoints: failpoints,
		KnownBugs:  knownBugs,
		Durability: &registry.Durability{
			Recipe: Recipes[0], Fault: "power-loss-all",
			Why:  "a majority of members keeps every committed write, so only a cut of every member at once can take one",
			Safe: registry.Settings{Name: "safe", Options: map[string]string{UnsafeNoFsyncFlag.Name: "false"}, What: "etcd's default: the WAL fsynced before a write is committed"},
			Relaxed: []registry.Settings{{Name: "relaxed", Options: map[string]string{UnsafeNoFsyncFlag.Name: "true"},
				What: "--unsafe-no-fsync: nothing fsynced"}},
		},
	})
}

// expiredGrant: the lock was granted on a lease that had already expired,
// so the lock key was gone when the client read it back at once. The
// trusting client acts on such a grant with token 0 (no real lock key has
// create revision 0); the careful one refuses it at its read-back
// (errKeyVanished). The mutex recipe runs its own read-back after its
// wait and answers ErrSessionExpired when its turn came on an expired
// lease: a grant of the recipe's that the careful client refuses (the
// trusting one acts on it, token 0).
//
// The same words from the Lock RPC are not a grant: they are the server
// refusing it (etcd 3.5 and later check the waiter's lease when its turn
// comes — the fix of issue 11456; 3.4.23 grants, and the key is gone at
// the read-back).
func expiredGrant(recipe string, e history.Event) bool {
	if e.F != history.Acquire {
		return false
	}
	switch e.Type {
	case history.OK:
		return e.Token == 0
	case history.Fail:
		return strings.Contains(e.Error, errKeyVanished) ||
			(recipe == "mutex" && strings.Contains(e.Error, concurrency.ErrSessionExpired.Error()))
	}
	return false
}

// UnsafeNoFsyncFlag is etcd's own --unsafe-no-fsync: the servers write
// their WAL and database without fsync. etcd's default, and ours, is
// false.
var UnsafeNoFsyncFlag = usage.Flag{Name: "etcd-unsafe-no-fsync",
	Usage: "etcd's --unsafe-no-fsync: true runs the servers without fsync (what a power fault then takes); false, etcd's default",
	Check: func(v string) error {
		switch v {
		case "", "true", "false":
			return nil
		}
		return fmt.Errorf("%q is not true or false", v)
	}}
