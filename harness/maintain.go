package harness

import (
	"context"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/internal/words"
)

// maintain runs the lock service's upkeep (backends.Maintainer) beside
// the workload until ctx, the workload's own context, ends; stop waits
// for it to return and logs what it did. Each task goes to check.log
// only (a compaction a second would bury the terminal); the summary
// line goes to both. A run whose DB has no upkeep, or whose system is
// not a Docker cluster, gets a stop that does nothing.
func maintain(ctx context.Context, sys System, logFile, logf func(string, ...any)) (stop func()) {
	ds, ok := sys.(*dockerSystem)
	if !ok {
		return func() {}
	}
	return runMaintainer(ctx, ds.db, ds.nodes, logFile, logf)
}

// runMaintainer is maintain over a DB and its cluster.
func runMaintainer(ctx context.Context, db backends.DB, c nodes.Nodes, logFile, logf func(string, ...any)) (stop func()) {
	m, ok := db.(backends.Maintainer)
	if !ok {
		return func() {}
	}
	done := make(chan backends.MaintenanceDone, 1)
	go func() { done <- m.Maintain(ctx, c, logFile) }()
	return func() {
		if did := <-done; len(did) > 0 {
			logf("upkeep during the workload: %s", maintenanceSummary(did))
		}
	}
}

// maintenanceSummary says what a Maintain did: "12 compactions (10
// answered), 6 defragmentations (4 answered)".
func maintenanceSummary(did backends.MaintenanceDone) string {
	var parts []string
	for _, c := range did {
		parts = append(parts, fmt.Sprintf("%s (%d answered)", words.Plural(c.Asked, c.Task), c.OK))
	}
	return strings.Join(parts, ", ")
}
