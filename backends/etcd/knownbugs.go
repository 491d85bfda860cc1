package etcd

import "github.com/fencecheck/fencecheck/backends/registry"

// knownBugs are etcd's published bugs that `check compare --preset
// known-bugs` reproduces, each on the release that had it and the one
// that fixed it (docs/known-bugs.md says where each release and
// condition comes from, and what each row measured).
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
