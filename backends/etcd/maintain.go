package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// The servers' upkeep during the workload (backends.Maintainer): a
// compaction of the store at its current revision every
// --etcd-compact-every, and a defragmentation of every member, one after
// the other, every --etcd-defrag-every — what an operator's cron (or
// Kubernetes' API server, which compacts every 5 minutes) does to a
// long-lived etcd, and where etcd's bugs 17780 (a crash during
// compaction) and 14685 (a crash during defragmentation) live. Each is
// asked through etcd's JSON gateway from inside a node, as every other
// question to a server goes.

// The upkeep's flags. 0 (the default) is off.
var (
	CompactEveryFlag = usage.Flag{Name: "etcd-compact-every",
		Usage: "compact the store at its current revision (physical: the answer waits until the member has compacted its database) this often during the workload, e.g. 1s; 0, the default, never",
		Check: checkEvery}
	DefragEveryFlag = usage.Flag{Name: "etcd-defrag-every",
		Usage: "defragment every member, one after the other, this often during the workload, e.g. 2s; 0, the default, never",
		Check: checkEvery}
)

// MinEvery is the shortest upkeep interval taken: an ask is an exec in a
// node (tens of milliseconds), and a shorter turn would be spent waiting
// for the last one.
const MinEvery = 100 * time.Millisecond

func checkEvery(v string) error {
	_, err := parseEvery(v)
	return err
}

// parseEvery reads an upkeep flag: "" and "0" are off.
func parseEvery(v string) (time.Duration, error) {
	if v == "" || v == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 1s or 500ms (0 is off)", v)
	}
	if d != 0 && d < MinEvery {
		return 0, fmt.Errorf("%s is below %s, the shortest turn (0 is off)", d, MinEvery)
	}
	return d, nil
}

// upkeepInfo says what upkeep the servers are given, for the report's
// header; "" when none.
func (d *DB) upkeepInfo() string {
	var parts []string
	if d.CompactEvery > 0 {
		parts = append(parts, fmt.Sprintf("compacted at the current revision every %s", d.CompactEvery))
	}
	if d.DefragEvery > 0 {
		parts = append(parts, fmt.Sprintf("every member defragmented every %s", d.DefragEvery))
	}
	return strings.Join(parts, ", ")
}

// Maintain runs the compactions and defragmentations the run asked for
// until ctx ends. A member that cannot answer (down under a fault) is
// logged and the next turn tries again.
func (d *DB) Maintain(ctx context.Context, c nodes.Nodes, logf func(string, ...any)) backends.MaintenanceDone {
	var did backends.MaintenanceDone
	var mu sync.Mutex
	count := func(task string, ok bool) {
		mu.Lock()
		defer mu.Unlock()
		i := 0
		for i < len(did) && did[i].Task != task {
			i++
		}
		if i == len(did) {
			did = append(did, backends.MaintenanceCount{Task: task})
		}
		did[i].Asked++
		if ok {
			did[i].OK++
		}
	}
	var wg sync.WaitGroup
	if d.CompactEvery > 0 {
		wg.Go(func() {
			compacted := int64(0)
			every(ctx, d.CompactEvery, func() {
				rev, ok := d.compact(ctx, c, compacted, logf)
				if rev > 0 {
					count("compaction", ok)
				}
				if ok {
					compacted = rev
				}
			})
		})
	}
	if d.DefragEvery > 0 {
		wg.Go(func() {
			every(ctx, d.DefragEvery, func() {
				for _, n := range d.nodes {
					if ctx.Err() != nil {
						return
					}
					count("defragmentation", d.defragment(ctx, c, n, logf))
				}
			})
		})
	}
	wg.Wait()
	return did
}

// every calls task each interval until ctx ends, the first time one
// interval after the start: the workload's first grants come before the
// first upkeep. A task that runs past its turn delays the next one
// rather than overlapping it.
func every(ctx context.Context, interval time.Duration, task func()) {
	t := time.NewTimer(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		task()
		t.Reset(interval)
	}
}

// compact compacts the store at the revision a member says it has
// reached, asking the members in turn until one answers both questions.
// It returns the revision asked for (0 when none was: no member
// answered, or the store has not moved since the last compaction, after
// which etcd would only answer that the revision is compacted) and
// whether the compaction was acknowledged.
func (d *DB) compact(ctx context.Context, c nodes.Nodes, last int64, logf func(string, ...any)) (int64, bool) {
	var errs []string
	for _, n := range d.nodes {
		rev, err := memberRevision(ctx, c, n)
		if err != nil {
			if ctx.Err() != nil {
				return 0, false
			}
			errs = append(errs, err.Error())
			continue
		}
		if rev <= last {
			logf("compaction: not asked, %s's revision %d is not past the last compaction's (%d)", n, rev, last)
			return 0, false
		}
		start := time.Now()
		body, err := backends.HTTPPostInNode(ctx, c, n, ClientPort, "/v3/kv/compaction", compactionRequest(rev))
		took := time.Since(start).Round(time.Millisecond)
		if err != nil {
			if ctx.Err() != nil {
				logf("compaction at revision %d through %s: cut short by the workload's end after %s", rev, n, took)
				return 0, false
			}
			logf("compaction at revision %d through %s: failed after %s: %v", rev, n, took, err)
			return rev, false
		}
		logf("compaction at revision %d through %s: done in %s (%s)", rev, n, took, answerRevision(body))
		return rev, true
	}
	logf("compaction: no member said its revision: %s", strings.Join(errs, "; "))
	return 0, false
}

// compactionRequest is the gateway's body for a physical compaction at
// rev: the answer waits until the member's database has dropped what
// the compaction removes, so a crash in it comes before the answer.
func compactionRequest(rev int64) string {
	return fmt.Sprintf(`{"revision":%d,"physical":true}`, rev)
}

// defragment defragments node's member and says whether it answered.
func (d *DB) defragment(ctx context.Context, c nodes.Nodes, node string, logf func(string, ...any)) bool {
	start := time.Now()
	body, err := backends.HTTPPostInNode(ctx, c, node, ClientPort, "/v3/maintenance/defragment", "{}")
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		if ctx.Err() != nil {
			logf("defragmentation of %s: cut short by the workload's end after %s", node, took)
			return false
		}
		logf("defragmentation of %s: failed after %s: %v", node, took, err)
		return false
	}
	logf("defragmentation of %s: done in %s (%s)", node, took, answerRevision(body))
	return true
}

// answerRevision reads the revision in an answer's header ("the member
// at revision 812"), or says the answer had none.
func answerRevision(body string) string {
	var a struct {
		Header struct {
			Revision json.Number `json:"revision"`
		} `json:"header"`
	}
	if err := json.Unmarshal([]byte(unquoteNumbers(body)), &a); err != nil || a.Header.Revision == "" {
		return fmt.Sprintf("answered %q", tailOf(strings.TrimSpace(body), 200))
	}
	if _, err := strconv.ParseInt(a.Header.Revision.String(), 10, 64); err != nil {
		return fmt.Sprintf("answered %q", tailOf(strings.TrimSpace(body), 200))
	}
	return "the member at revision " + a.Header.Revision.String()
}
