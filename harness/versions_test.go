package harness

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/reports"
)

// A node that answers after a moment (a server just resumed) is recorded
// with its answer; one that never answers is unknown, with its last error,
// once the wait is over — never an error of the run.
func TestAskNodeRetriesThenRecordsUnknown(t *testing.T) {
	calls := 0
	got := askNode(context.Background(), "n1", func(context.Context) (backends.ServerVersion, error) {
		calls++
		if calls < 3 {
			return backends.ServerVersion{}, errors.New("n1: container is paused")
		}
		return backends.ServerVersion{Answer: "3.8.0-x", Version: "3.8.0"}, nil
	})
	if got != (reports.ServerNode{Node: "n1", Version: "3.8.0", Answer: "3.8.0-x"}) || calls != 3 {
		t.Errorf("after %d calls: %+v", calls, got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 1200*time.Millisecond)
	defer cancel()
	start := time.Now()
	got = askNode(ctx, "n2", func(context.Context) (backends.ServerVersion, error) {
		return backends.ServerVersion{}, errors.New("n2: exit 124")
	})
	if got != (reports.ServerNode{Node: "n2", Version: reports.UnknownVersion, Error: "n2: exit 124"}) {
		t.Errorf("a silent node: %+v", got)
	}
	// A bound on the behaviour (the asking ends with its 1.2 s wait), with
	// room for a loaded 2-core machine: a node asked without end would
	// hold the run for good.
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("a silent node held the run for %s, with a wait of 1.2 s", took)
	}
}
