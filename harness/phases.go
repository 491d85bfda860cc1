package harness

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/nemesis"
)

// phasesDone is how far the workload phases got.
type phasesDone struct {
	// interrupted: a signal came during the workload, the heal or the
	// final reads.
	interrupted bool
	// incomplete says what was not done ("" when the workload ran to its
	// time limit and every key's final read was taken).
	incomplete string
	// stoppedAtViolation: --stop-on-violation ended the workload when the
	// live check found a violation; the run is not incomplete for that.
	stoppedAtViolation bool
}

// runWorkloadPhases drives the workload and the nemesis until the time
// limit, the first interrupt or the workload's failure, heals every fault
// and takes the final reads. It reports how far it got and the first
// error.
func runWorkloadPhases(stop context.Context, cfg *Config, sys System, rec *history.Recorder,
	logf, progressf func(string, ...any), con *console) (phasesDone, error) {
	var done phasesDone
	hold := &nemesis.Hold{}
	faults, settings, err := buildFaults(cfg, sys, rec, hold)
	if err != nil {
		return done, err
	}
	sched := &nemesis.Schedule{
		Faults:   faults,
		Warmup:   min(cfg.NemesisInterval/2, cfg.TimeLimit/10),
		Interval: cfg.NemesisInterval,
		Hold:     nemesis.HoldFor(settings),
		Rng:      rand.New(rand.NewPCG(uint64(cfg.Seed), 0xfe11ce)),
		Rec:      rec,
		Log:      logf,
	}

	// The workload and the nemesis run until the time limit, the first
	// interrupt, or until either gives up (every slot failed, a heal
	// failed); the nemesis then heals before the workload is waited for,
	// since a frozen client cannot finish its op.
	cfg.phase("workload")
	wlStart := time.Now()
	runCtx, cancelRun := context.WithTimeout(stop, cfg.TimeLimit)
	defer cancelRun()
	cfg.live.onEnd(cancelRun)
	nemDone := make(chan error, 1)
	go func() { nemDone <- sched.Run(runCtx) }()
	logf("workload: %s, %s, %s", words.Plural(cfg.Clients, "client"), words.Plural(cfg.Keys, "key"), cfg.TimeLimit)
	type wlResult struct {
		next int
		err  error
	}
	wlDone := make(chan wlResult, 1)
	go func() {
		n, err := runWorkload(runCtx, cfg, sys, rec, hold, logf)
		wlDone <- wlResult{n, err}
	}()
	stopProgress := startProgress(runCtx, cfg, rec, sched, time.Now(), progressf, con.Status)
	// A history that cannot be written (a full disk) ends the workload:
	// nothing more it does can be checked.
	go func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
				if err := rec.Err(); err != nil {
					logf("ending the workload: %v", err)
					cancelRun()
					return
				}
			}
		}
	}()
	var (
		wl      wlResult
		nemErr  error
		wlEnded bool
	)
	nemEnded := false
	select {
	case <-runCtx.Done():
	case wl = <-wlDone:
		wlEnded = true
	case nemErr = <-nemDone:
		nemEnded = true
		if nemErr == nil {
			select {
			case <-runCtx.Done():
			case wl = <-wlDone:
				wlEnded = true
			}
		}
	}
	// The workload ran to its time limit only if the deadline ended it.
	ran := time.Since(wlStart)
	fullTime := errors.Is(runCtx.Err(), context.DeadlineExceeded)
	nemLogged := false
	if runCtx.Err() == nil {
		switch {
		case nemErr != nil:
			nemLogged = true
			logf("the nemesis gave up early: %v", nemErr)
		case wlEnded && wl.err != nil:
			logf("the workload gave up early: %v", wl.err)
		}
	}
	cancelRun()
	if !nemEnded {
		nemErr = <-nemDone
	}
	cfg.phase("heal")
	healErr := nemesis.HealAll(faults)
	stopProgress()
	if !wlEnded {
		wl = <-wlDone
	}
	interrupted := stop.Err() != nil
	if interrupted && wl.err != nil && errors.Is(wl.err, context.Canceled) {
		// A client cut short while it was being opened: the interrupt's
		// doing, not the system's.
		logf("workload: %v", wl.err)
		wl.err = nil
	}
	// What is still broken after the last heal comes first: it is what
	// the person must act on. A heal the nemesis failed that the last one
	// did is only logged.
	var runErr error
	switch {
	case healErr != nil:
		runErr = healErr
		if nemErr != nil && !nemLogged {
			logf("the nemesis gave up: %v", nemErr)
		}
	case nemErr != nil:
		runErr = nemErr
	case wl.err != nil:
		runErr = wl.err
	}
	done.interrupted = interrupted
	done.stoppedAtViolation = !fullTime && stop.Err() == nil && cfg.live.stoppedWorkload()
	switch {
	case done.stoppedAtViolation:
		logf("the workload was stopped %.1f s into %s at the first violation (--stop-on-violation)", ran.Seconds(), cfg.TimeLimit)
	case !fullTime:
		why := "the workload ended"
		if stop.Err() != nil {
			why = "interrupted"
		}
		done.incomplete = fmt.Sprintf("%s after %.1f s of the %s workload, before the final reads", why, ran.Seconds(), cfg.TimeLimit)
	case interrupted:
		done.incomplete = fmt.Sprintf("interrupted before the final reads (the workload ran its full %s)", cfg.TimeLimit)
	}
	if runErr == nil && !interrupted && rec.Err() == nil {
		cfg.phase("final reads")
		logf("final reads")
		read, err := finalReads(stop, cfg, sys, rec, wl.next)
		if err != nil {
			runErr = err
		}
		if stop.Err() != nil {
			logf("final reads cut short by an interrupt")
			done.interrupted = true
			done.incomplete = fmt.Sprintf("interrupted during the final reads (%d of %s read; the workload ran its full %s)", read, words.Plural(cfg.Keys, "key"), cfg.TimeLimit)
		}
	} else if done.incomplete == "" {
		done.incomplete = "the final reads did not happen"
	}
	return done, runErr
}
