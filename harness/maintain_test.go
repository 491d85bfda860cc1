package harness

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// upkeepDB is a DB with upkeep that counts its turns until its context
// ends: what the harness must start with the workload and wait for at
// its end. Only Maintain is called.
type upkeepDB struct {
	backends.DB
	turns int
}

func (u *upkeepDB) Maintain(ctx context.Context, _ nodes.Nodes, logf func(string, ...any)) backends.MaintenanceDone {
	for {
		select {
		case <-ctx.Done():
			return backends.MaintenanceDone{{Task: "compaction", Asked: u.turns, OK: u.turns - 1}, {Task: "defragmentation", Asked: 1, OK: 1}}
		case <-time.After(time.Millisecond):
			u.turns++
			logf("turn %d", u.turns)
		}
	}
}

type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, fmt.Sprintf(format, args...))
}

func TestRunMaintainerRunsUntilTheWorkloadEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	db := &upkeepDB{}
	var file, both lines
	stop := runMaintainer(ctx, db, nil, file.logf, both.logf)
	time.Sleep(20 * time.Millisecond)
	cancel()
	stop()
	turns := db.turns // stop waited: Maintain has returned
	time.Sleep(10 * time.Millisecond)
	if db.turns != turns || turns == 0 {
		t.Fatalf("%d turns, then %d after stop", turns, db.turns)
	}
	if len(file.got) != turns {
		t.Errorf("check.log got %d lines for %d turns", len(file.got), turns)
	}
	want := fmt.Sprintf("upkeep during the workload: %d compactions (%d answered), 1 defragmentation (1 answered)", turns, turns-1)
	if len(both.got) != 1 || both.got[0] != want {
		t.Errorf("summary %q, want %q", both.got, want)
	}
}

// A DB without upkeep gets a stop that returns at once and logs nothing.
func TestRunMaintainerWithoutUpkeep(t *testing.T) {
	var file, both lines
	stop := runMaintainer(context.Background(), struct{ backends.DB }{}, nil, file.logf, both.logf)
	stop()
	if len(file.got)+len(both.got) != 0 {
		t.Errorf("logged %q %q", file.got, both.got)
	}
}
