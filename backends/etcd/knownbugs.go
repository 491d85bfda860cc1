package etcd

import (
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
)

// knownBugs are etcd's published bugs that `check compare --preset
// known-bugs` reproduces, each on the release that had it and the one
// that fixed it (docs/known-bugs.md says where each release and
// condition comes from, and what each row measured). Issue 17780 (a
// revision that goes down after a panic during compaction) has no row:
// its failpoint arrived with the fix, so its broken release cannot be
// crashed at that line, and a lock workload's compactions never reach
// the empty last batch the bug needs (docs/known-bugs.md).
var knownBugs = []registry.KnownBug{
	{
		// A one-member etcd 3.5.0–3.5.4 applied and acknowledged a write
		// before its raft log held it; its regression test panics at
		// raftBeforeSave. The resource is kept in etcd, the holder's write
		// a transaction guarded by the lock, so the write lost is the one
		// the next holder reads (docs/failpoints.md).
		Name:    "etcd 14370",
		Broke:   "an acknowledged write lost when the one member crashed right after replying",
		Recipe:  "mutex",
		Storage: "etcd",
		Nodes:   1, Clients: 2,
		Fault:   "failpoint",
		Options: map[string]string{"failpoint": "raftBeforeSave=panic", "failpoint-when": "grant"},
		Broken:  registry.BugSide{Version: "3.5.4"},
		Fixed:   registry.BugSide{Version: "3.5.5"},
	},
	{
		// 3.5.0–3.5.5 committed a defragmentation's pending writes without
		// the consistent index, so a member that crashed before the
		// defragmented file replaced the old one applied those entries
		// again on restart (etcd's robustness tests, PR 14685; fixed in
		// 3.5.6). Measured: the re-apply happens on 3.5.5, but a lock
		// workload's writes are all guarded or idempotent, so applying
		// them twice changed nothing the check or the agreement sees
		// (docs/known-bugs.md).
		Name:    "etcd 14685",
		Broke:   "a crash during defragmentation: the member applies entries again, and its revisions can run ahead",
		Recipe:  "mutex",
		Storage: "etcd",
		Nodes:   3, Clients: 5,
		Fault:           "failpoint",
		NemesisInterval: 4 * time.Second,
		Options: map[string]string{"failpoint": "defragBeforeRename=panic", "failpoint-target": "one",
			DefragEveryFlag.Name: "1s"},
		Broken: registry.BugSide{Version: "3.5.5"},
		Fixed:  registry.BugSide{Version: "3.5.6"},
	},
	{
		// 3.5.0–3.5.2 did not save the consistent index atomically with
		// what it indexes, so members diverged after a SIGKILL under load
		// (issue 13766; fixed in 3.5.3). Ten clients are the load.
		Name:    "etcd 13766",
		Broke:   "members diverged after a kill under load: the same revision holds different data",
		Recipe:  "mutex",
		Storage: "etcd",
		Nodes:   3, Clients: 10,
		Fault:  "kill",
		Broken: registry.BugSide{Version: "3.5.2"},
		Fixed:  registry.BugSide{Version: "3.5.3"},
	},
	{
		// The Lock RPC of 3.4 granted the lock on a lease that had expired
		// while its waiter waited, which Jepsen measured on 3.4.3; from 3.5
		// the server checks the waiter's lease when its turn comes
		// (docs/versions.md). A client that trusts its grant, unfenced,
		// acts on it.
		Name:       "etcd 11456",
		Broke:      "the Lock RPC granted the lock on an expired lease: two holders at once",
		Recipe:     "lock-rpc",
		Fencing:    "none",
		LeaseCheck: registry.LeaseCheckNone,
		Fault:      "pause-all",
		Broken:     registry.BugSide{Version: "3.4"},
		Fixed:      registry.BugSide{Version: "3.5"},
	},
}
