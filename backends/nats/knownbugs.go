package nats

import (
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
)

// knownBugs are NATS's published bugs that `check compare --preset
// known-bugs` reproduces (docs/known-bugs.md says where each release and
// condition comes from, and what each row measured).
var knownBugs = []registry.KnownBug{
	{
		// Jepsen's analysis of NATS 2.12.1: under the default
		// sync_interval JetStream acknowledges writes it has not
		// fsynced, so a power failure of every server at once can take
		// acknowledged writes, the whole KV bucket with them. Here the
		// fix is a setting, not a release: sync_interval always. The
		// service needs about 10 s after a cut before it serves again
		// (compare's power preset, docs/power-loss.md); measured with two
		// runs at a time, its stream leader came 8.2 to 13.9 s after the
		// restart, so a first cut can go without a grant after it before
		// the next (docs/known-bugs.md).
		Name:            "nats 7564",
		Broke:           "a coordinated power failure lost acknowledged writes: the KV bucket or its revisions",
		Recipe:          Recipes[0],
		Fault:           "power-loss-all",
		NemesisInterval: 10 * time.Second,
		TimeLimit:       30 * time.Second,
		Broken:          registry.BugSide{Version: "2.12.1", Options: map[string]string{SyncFlag: SyncDefault}},
		Fixed:           registry.BugSide{Version: "2.12.1", Options: map[string]string{SyncFlag: SyncAlways}},
	},
	{
		// Jepsen (May 2025): in 2.10.20–2.10.22 a handful of kill -9s made
		// JetStream forget a stream existed; 2.10.23 fixed it (Jepsen's
		// 2.12.1 analysis and Synadia's answer say so; the issue names no
		// release). Measured: not reproduced here, where a kill takes one
		// server of three and Jepsen's could take several at once; both
		// releases instead now and then leave one replica of the stream
		// hundreds of sequences behind after a kill, and it hands the
		// revisions out again once it leads (docs/known-bugs.md), so
		// either side can come out invalid.
		Name:      "nats 6888",
		Broke:     "a stream forgotten after kill -9s: the bucket and its revisions lost",
		Recipe:    Recipes[0],
		Fault:     "kill+kill-leader",
		TimeLimit: 30 * time.Second,
		Broken:    registry.BugSide{Version: "2.10.22"},
		Fixed:     registry.BugSide{Version: "2.10.23"},
	},
	{
		// Jepsen (November 2025), 2.12.1, five nodes, replication five:
		// one node's crash while others were paused, then the paused and
		// the running swapped, left two quorums with different writes.
		// The issue is open and calls itself an example of 7564, so the
		// fixed row is sync_interval always on the same release.
		// Measured: not reproduced, since fencecheck's schedule heals
		// each fault before the next and Jepsen's held a minority paused
		// across the crash (docs/known-bugs.md).
		Name:      "nats 7567",
		Broke:     "split brain after one node's crash amid pauses: acknowledged writes lost",
		Recipe:    Recipes[0],
		Nodes:     5,
		Fault:     "pause-server+kill",
		TimeLimit: 30 * time.Second,
		Broken:    registry.BugSide{Version: "2.12.1", Options: map[string]string{SyncFlag: SyncDefault}},
		Fixed:     registry.BugSide{Version: "2.12.1", Options: map[string]string{SyncFlag: SyncAlways}},
	},
}
