package harness

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/nemesis"
)

// startProgress reports the workload's progress, counted by r's recorder
// with the faults sched has active, until stopped: the console's status
// gets a fresh line twice a second (a terminal's live status line),
// progressf one every five seconds (the log, and the console when it is
// no terminal).
func (r *run) startProgress(ctx context.Context, sched *nemesis.Schedule) func() {
	rec, limit, logf, status := r.rec, r.t.cfg.TimeLimit, r.progressf, r.con.Status
	started := time.Now()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		var last history.Counts
		lastAt := time.Now()
		rate := 0.0
		for tick := 1; ; tick++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				c := rec.Counts()
				if tick%2 == 0 {
					rate = float64(c.OK+c.Fail+c.Info-last.OK-last.Fail-last.Info) / now.Sub(lastAt).Seconds()
					last, lastAt = c, now
				}
				active := strings.Join(sched.Active(), "; ")
				if active == "" {
					active = "none"
				}
				line := fmt.Sprintf("%s of %s: %.0f ops/s, ok %d, fail %d, info %d, faults: %s",
					time.Since(started).Round(time.Second), limit, rate, c.OK, c.Fail, c.Info, active)
				status(line)
				if tick%10 == 0 {
					logf("%s", line)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
