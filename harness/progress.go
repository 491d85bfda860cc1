package harness

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/nemesis"
)

// startProgress logs a status line every few seconds until stopped.
func startProgress(ctx context.Context, cfg *Config, rec *history.Recorder, sched *nemesis.Schedule, started time.Time, logf func(string, ...any)) func() {
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		var last history.Counts
		lastAt := time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-t.C:
				c := rec.Counts()
				rate := float64(c.OK+c.Fail+c.Info-last.OK-last.Fail-last.Info) / now.Sub(lastAt).Seconds()
				last, lastAt = c, now
				active := strings.Join(sched.Active(), " ")
				if active == "" {
					active = "none"
				}
				logf("%s of %s: %.0f ops/s, ok %d, fail %d, info %d, faults: %s",
					time.Since(started).Round(time.Second), cfg.TimeLimit, rate, c.OK, c.Fail, c.Info, active)
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
