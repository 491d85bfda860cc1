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
	// stoppedAtExposures: --exposures ended the workload once that many
	// exposures were seen; the run is not incomplete for that either.
	stoppedAtExposures bool
	// endedBy says what ended the workload: its time limit, a violation
	// (--stop-on-violation), enough exposures (--exposures), or "" when
	// something else did (an interrupt, a failure).
	endedBy string
}

// What ended a workload, as results.json's ended_by says it.
const (
	EndedByTimeLimit = "time-limit"
	EndedByViolation = "violation"
	EndedByExposures = "exposures"
)

// workloadPhases drives the workload and the nemesis on r.sys until the
// time limit, the first interrupt or the workload's failure, heals every
// fault and takes the final reads. It reports how far it got and the
// first error.
func (r *run) workloadPhases() (phasesDone, error) {
	cfg, stop, logf, live := &r.t.cfg, r.stop, r.logf, r.live
	var done phasesDone
	claims := &nemesis.Claims{}
	faults, settings, err := buildFaults(r.t, r.sys, r.rec, claims)
	if err != nil {
		return done, err
	}
	sched := &nemesis.Schedule{
		Faults:        faults,
		Warmup:        min(cfg.NemesisInterval/2, cfg.TimeLimit/10),
		Interval:      cfg.NemesisInterval,
		FaultDuration: nemesis.FaultDuration(settings),
		Rng:           rand.New(rand.NewPCG(uint64(cfg.Seed), 0xfe11ce)),
		LaneRng:       func(lane int) *rand.Rand { return rand.New(rand.NewPCG(uint64(cfg.Seed), 0xfe11ce+uint64(lane))) },
		Rec:           r.rec,
		Log:           logf,
	}
	wl := workload{cfg: cfg, sys: r.sys, rec: r.rec, claims: claims, logf: logf}
	stopWatch := watchLeader(r.sys, r.rec)
	d := r.drive(wl, sched)
	stopWatch()
	r.drops = cutDrops(faults, r.rec.Start())
	interrupted := stop.Err() != nil
	if interrupted && d.wl.err != nil && errors.Is(d.wl.err, context.Canceled) {
		// A client cut short while it was being opened: the interrupt's
		// doing, not the system's.
		logf("workload: %v", d.wl.err)
		d.wl.err = nil
	}
	// What is still broken after the last heal comes first: it is what
	// the person must act on. A heal the nemesis failed that the last one
	// did is only logged.
	var runErr error
	switch {
	case d.healErr != nil:
		runErr = d.healErr
		if d.nemErr != nil && !d.nemLogged {
			logf("the nemesis gave up: %v", d.nemErr)
		}
	case d.nemErr != nil:
		runErr = d.nemErr
	case d.wl.err != nil:
		runErr = d.wl.err
	}
	done.interrupted = interrupted
	done.stoppedAtViolation = !d.fullTime && stop.Err() == nil && live.stoppedWorkload()
	done.stoppedAtExposures = !d.fullTime && stop.Err() == nil && !done.stoppedAtViolation && live.reachedExposures()
	switch {
	case d.fullTime:
		done.endedBy = EndedByTimeLimit
	case done.stoppedAtViolation:
		done.endedBy = EndedByViolation
	case done.stoppedAtExposures:
		done.endedBy = EndedByExposures
	}
	switch {
	case done.stoppedAtViolation:
		logf("the workload was stopped %.1f s into %s at the first violation (--stop-on-violation)", d.ran.Seconds(), cfg.TimeLimit)
	case done.stoppedAtExposures:
		logf("the workload ended %.1f s into %s, once %s had been seen (--exposures)", d.ran.Seconds(), cfg.TimeLimit, words.Plural(cfg.Exposures, "exposure"))
	case !d.fullTime:
		why := "the workload ended"
		if stop.Err() != nil {
			why = "interrupted"
		}
		done.incomplete = fmt.Sprintf("%s after %.1f s of the %s workload, before the final reads", why, d.ran.Seconds(), cfg.TimeLimit)
	case interrupted:
		done.incomplete = fmt.Sprintf("interrupted before the final reads (the workload ran its full %s)", cfg.TimeLimit)
	}
	if runErr == nil && !interrupted && r.rec.Err() == nil {
		r.phase("final reads")
		logf("final reads")
		read, err := wl.finalReads(stop, d.wl.next)
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

// wlResult is how the workload ended: the next op number for the final
// reads, and why it gave up.
type wlResult struct {
	next int
	err  error
}

// driven is how the workload and the nemesis ended and how long the
// workload ran.
type driven struct {
	wl              wlResult
	nemErr, healErr error
	// nemLogged: the nemesis's error is already in the log.
	nemLogged bool
	ran       time.Duration
	// fullTime: the deadline ended the workload.
	fullTime bool
}

// drive runs the workload wl and the nemesis's schedule until the time
// limit, the first interrupt, or until either gives up (every slot
// failed, a heal failed); the nemesis then heals before the workload is
// waited for, since a frozen client cannot finish its op.
func (r *run) drive(wl workload, sched *nemesis.Schedule) driven {
	cfg, logf := &r.t.cfg, r.logf
	var d driven
	r.phase("workload")
	wlStart := time.Now()
	runCtx, cancelRun := context.WithTimeout(r.stop, cfg.TimeLimit)
	defer cancelRun()
	r.live.onEnd(cancelRun)
	nemDone := make(chan error, 1)
	go func() { nemDone <- sched.Run(runCtx) }()
	logf("workload: %s, %s, %s", words.Plural(cfg.Clients, "client"), words.Plural(cfg.Keys, "key"), cfg.TimeLimit)
	wlDone := make(chan wlResult, 1)
	go func() {
		n, err := wl.run(runCtx)
		wlDone <- wlResult{n, err}
	}()
	stopProgress := r.startProgress(runCtx, sched)
	stopUpkeep := maintain(runCtx, r.sys, r.logFileOnly, logf)
	go watchHistory(runCtx, r.rec, logf, cancelRun)
	wlEnded, nemEnded := false, false
	select {
	case <-runCtx.Done():
	case d.wl = <-wlDone:
		wlEnded = true
	case d.nemErr = <-nemDone:
		nemEnded = true
		if d.nemErr == nil {
			select {
			case <-runCtx.Done():
			case d.wl = <-wlDone:
				wlEnded = true
			}
		}
	}
	// The workload ran to its time limit only if the deadline ended it.
	d.ran = time.Since(wlStart)
	d.fullTime = errors.Is(runCtx.Err(), context.DeadlineExceeded)
	if runCtx.Err() == nil {
		switch {
		case d.nemErr != nil:
			d.nemLogged = true
			logf("the nemesis gave up early: %v", d.nemErr)
		case wlEnded && d.wl.err != nil:
			logf("the workload gave up early: %v", d.wl.err)
		}
	}
	cancelRun()
	// The upkeep ends with the workload: none runs under the heal or
	// the final reads.
	stopUpkeep()
	if !nemEnded {
		d.nemErr = <-nemDone
	}
	r.phase("heal")
	d.healErr = nemesis.HealAll(sched.Faults)
	stopProgress()
	if !wlEnded {
		d.wl = <-wlDone
	}
	return d
}

// watchHistory ends the workload when the history cannot be written (a
// full disk): nothing more it does could be checked.
func watchHistory(ctx context.Context, rec *history.Recorder, logf func(string, ...any), cancel func()) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if err := rec.Err(); err != nil {
				logf("ending the workload: %v", err)
				cancel()
				return
			}
		}
	}
}
