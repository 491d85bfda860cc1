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
		// service needs 10 s after a cut before it serves again
		// (compare's power preset, docs/power-loss.md).
		Name:            "nats 7564",
		Broke:           "a coordinated power failure lost acknowledged writes: the KV bucket or its revisions",
		Recipe:          Recipes[0],
		Fault:           "power-loss-all",
		NemesisInterval: 10 * time.Second,
		TimeLimit:       30 * time.Second,
		Broken:          registry.BugSide{Options: map[string]string{SyncFlag: SyncDefault}},
		Fixed:           registry.BugSide{Options: map[string]string{SyncFlag: SyncAlways}},
	},
}
