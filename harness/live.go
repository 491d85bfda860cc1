package harness

import (
	"context"
	"sync"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// liveCheck checks the history while the test runs, as the recorder
// writes it, so a violation is known — and printed — the moment it is
// certain; with StopOnViolation it also ends the workload there (the run
// then heals, takes the final reads, checks and reports as at its time
// limit). It only ever reports violations: the check of the whole history
// after the run stays the verdict, and since a violation in what was
// recorded so far stays one in the whole history (an op still in flight
// counts as unknown, the most lenient reading), the two never disagree.
type liveCheck struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []history.Event
	closed bool
	done   chan struct{}

	stopOn      bool
	endWorkload func()
	found       bool
	logf        func(string, ...any)

	// exposures counts the exposures as they happen; with wantExposures
	// above 0 (--exposures) the workload ends once that many were seen.
	exposures     *models.ExposureCounter
	wantExposures int
	seenEnough    bool
}

// startLive begins checking what rec records. The recorder calls the
// observer under its lock, so events only join a queue there; a goroutine
// of its own checks them.
func startLive(t *Test, rec *history.Recorder, logf func(string, ...any)) *liveCheck {
	l := &liveCheck{done: make(chan struct{}), stopOn: t.cfg.StopOnViolation, logf: logf,
		exposures: models.NewExposureCounter(), wantExposures: t.cfg.Exposures}
	l.cond = sync.NewCond(&l.mu)
	stream := models.NewStream(context.Background(), models.Options{VisualizeMaxOps: 1, OnViolation: l.violation})
	rec.Observe(func(e history.Event) {
		l.mu.Lock()
		if !l.closed {
			l.queue = append(l.queue, e)
			l.cond.Signal()
		}
		l.mu.Unlock()
	})
	go func() {
		defer close(l.done)
		defer stream.Finish()
		v := history.NewValidator()
		var batch []history.Event
		for {
			l.mu.Lock()
			for len(l.queue) == 0 && !l.closed {
				l.cond.Wait()
			}
			if l.closed {
				l.mu.Unlock()
				return
			}
			batch, l.queue = l.queue, batch[:0]
			l.mu.Unlock()
			for _, e := range batch {
				// What the recorder writes is well formed; should it ever
				// not be, the live check stops rather than guess.
				if err := v.Check(e); err != nil {
					logf("live check stopped at event %d: %v", e.Index, err)
					l.close()
					return
				}
				if err := stream.Add(e); err != nil {
					return
				}
				l.countExposure(e)
			}
		}
	}()
	return l
}

func (l *liveCheck) violation(k models.KeyResult) {
	l.mu.Lock()
	first := !l.found
	l.found = true
	end := l.endWorkload
	l.mu.Unlock()
	if !first {
		return
	}
	l.logf("violation found while the test runs: key %s: %s", k.Key, k.Explanation)
	if l.stopOn && end != nil {
		l.logf("--stop-on-violation: ending the workload; healing, final reads, check and report follow")
		end()
	}
}

// countExposure counts e's part in the exposures and, with --exposures,
// ends the workload once enough were seen.
func (l *liveCheck) countExposure(e history.Event) {
	if l.wantExposures <= 0 {
		return
	}
	l.exposures.Add(e)
	if n := l.exposures.Counted(); n >= l.wantExposures {
		l.mu.Lock()
		first := !l.seenEnough
		l.seenEnough = true
		end := l.endWorkload
		l.mu.Unlock()
		if first && end != nil {
			l.logf("--exposures %d: %d seen; ending the workload; healing, final reads, check and report follow", l.wantExposures, n)
			end()
		}
	}
}

// reachedExposures reports whether the live check ended the workload
// because --exposures were seen.
func (l *liveCheck) reachedExposures() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seenEnough && l.endWorkload != nil
}

// onEnd gives the live check the way to end the workload early (a nil
// check does nothing).
func (l *liveCheck) onEnd(end func()) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.endWorkload = end
	found, enough := l.found, l.seenEnough
	l.mu.Unlock()
	if (found && l.stopOn) || enough {
		end()
	}
}

// close stops the live check: what was queued and not yet checked is left
// to the check after the run.
func (l *liveCheck) close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.closed = true
	l.queue = nil
	l.cond.Signal()
	l.mu.Unlock()
}

// wait returns when the live check's goroutine has ended.
func (l *liveCheck) wait() {
	if l != nil {
		l.close()
		<-l.done
	}
}

// stoppedWorkload reports whether the live check ended the workload at a
// violation (--stop-on-violation).
func (l *liveCheck) stoppedWorkload() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.found && l.stopOn && l.endWorkload != nil
}

// foundViolation reports whether the live check found a violation.
func (l *liveCheck) foundViolation() bool {
	if l == nil {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.found
}
