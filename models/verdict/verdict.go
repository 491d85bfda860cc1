// Package verdict settles a run's verdict: from what the check of its
// history found and what is known of how the run went, the one verdict
// that the run itself, `check report`, `check analyze`, the store's index
// (reports) and `check compare merge` all give. Settle is the only place
// that decides it, step by step: an invalid verdict names the stale write
// that caused it first, and the crash that lost a grant the lock service
// then contradicted; servers that at the end diverged or no longer hold a
// token they acknowledged (models.Agreement) are a violation too; a
// violation stands whatever else happened; any
// other run that did not finish — it could not be carried out, was cut
// short, left a history without its end event, or its check was skipped
// or stopped — is never valid but unknown; and a valid verdict is held to
// the exposures the run was asked for (--min-exposures) and, under a power
// fault, to its cuts: made, and granted after (models.PowerCuts); under
// crashes, to a grant after at least one of them (models.Crashes).
//
// It must never open a file, run the check, parse a flag or write a
// report: callers bring the check's result and what they know of the
// run, and it only decides (a streamed history is read again only through
// the reader its caller opens). It imports models and history alone, so
// that reports, which only reads results, and compare may call it just as
// the harness does.
package verdict

import (
	"io"
	"slices"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// Run is what is known of a run when its verdict is settled. The zero
// value of a field means "nothing to say": a finished run, no exposures
// counted.
type Run struct {
	// Check is what the check of the history found; for a stored run that
	// is not checked again (the index, a merge), the verdict its file says.
	Check models.Result
	// Ops are the history's ops, in which an invalid verdict's stale
	// write is named first. Reread, when set, opens a streamed history
	// again for that instead (`check analyze` holds no ops).
	Ops    []history.Op
	Reread func() (io.ReadCloser, error)
	// Unfinished says why the run did not finish: its workload did not
	// reach the time limit, its final reads did not happen or were cut
	// short, or its history does not end with the end event. "" when it
	// finished.
	Unfinished string
	// Failed is why the run could not be carried out ("" when it could).
	Failed string
	// CheckSkipped is a run whose check was skipped: it was interrupted a
	// second time.
	CheckSkipped bool
	// Stopped is why a re-check was stopped before it ended (an
	// interrupt); nil when it was not.
	Stopped error
	// Exposures are the run's exposures, counted from its history; nil
	// when they were not counted. Facts explain why there were none, and
	// MinExposures is how many a valid verdict needs.
	Exposures    *models.Exposures
	Facts        models.RunFacts
	MinExposures int
	// Agreement is what the servers held at the end (models.Agreement);
	// nil when they were not asked.
	Agreement *models.Agreement
	// Drops are what each power cut dropped, as the faults reported it
	// (models.CountPowerCuts); nil when none was recorded.
	Drops []models.Drop
}

// Settle is the run's verdict. Per-key results are kept as the check
// found them, except that a key the check found valid in a run that did
// not finish is unknown, as the run is.
func Settle(r Run) models.Result {
	res := namedCause(r)
	res = withAgreement(res, r.Agreement, r.Facts.Faults)
	res = finished(res, r.Unfinished, r.Failed, r.CheckSkipped)
	if r.Exposures != nil {
		x := *r.Exposures
		x.Reason = models.NoExposureReason(x.ExposureCounts, r.Facts)
		res = res.WithExposures(x, r.MinExposures)
	}
	if r.Reread == nil {
		// A run under a power fault is held to its cuts: made, and
		// granted after (models.PowerCuts). A streamed history holds no
		// ops to count the grants from.
		res = res.WithPowerCuts(models.CountPowerCuts(r.Ops, r.Facts.Faults, r.Facts.Nemesis, r.Drops))
		// So is a run with crashes: granted after at least one of them
		// (models.Crashes).
		res = res.WithCrashes(models.CountCrashes(r.Ops, r.Facts.Faults, r.Drops), r.Facts.GrantAfterEachCrash)
	}
	if r.Stopped != nil && res.Verdict != models.Invalid {
		res.Verdict, res.Explanation = models.Unknown, r.Stopped.Error()
	}
	return res
}

// namedCause is the check's result with each invalid key's stale write
// told first (models.StaleWriteFirst), and the crash that lost a grant the
// lock service later contradicted (models.CrashFirst, from Facts.Faults).
// On any trouble reading a streamed history again, the result stands as
// the check gave it.
func namedCause(r Run) models.Result {
	if r.Reread == nil {
		return models.CrashFirst(models.StaleWriteFirst(r.Check, r.Ops), r.Ops, r.Facts.Faults)
	}
	if r.Check.Verdict != models.Invalid {
		return r.Check
	}
	f, err := r.Reread()
	if err != nil {
		return r.Check
	}
	defer f.Close()
	return models.StaleWriteFirstFrom(f, r.Check)
}

// finished is the verdict of a run from the check's result and how the
// run went. A violation the check found stands whatever happened: the
// history that shows it is real. Anything else is unknown when the check
// was skipped, the run could not be carried out, or the run did not
// finish — "no violation in the seconds that ran" is information, not a
// verdict.
func finished(res models.Result, unfinished, failed string, checkSkipped bool) models.Result {
	res = finishedVerdict(res, unfinished, failed, checkSkipped)
	if res.Verdict != models.Unknown || (unfinished == "" && failed == "" && !checkSkipped) {
		return res // a finished run's keys are what its check found
	}
	// A key the check found valid in a run that did not finish was valid
	// only in what was recorded: it is unknown, as the run is.
	keys := slices.Clone(res.Keys)
	for i := range keys {
		if keys[i].Verdict == models.Valid {
			keys[i].Verdict = models.Unknown
			keys[i].Explanation = "no violation on this key in what was recorded, but the run did not finish"
		}
	}
	res.Keys = keys
	return res
}

// finishedVerdict is finished's run-level verdict and explanation.
func finishedVerdict(res models.Result, unfinished, failed string, checkSkipped bool) models.Result {
	if res.Verdict == models.Invalid {
		return res
	}
	switch {
	case checkSkipped:
		res.Verdict = models.Unknown
		res.Explanation = "the check was skipped: interrupted a second time"
	case failed != "":
		res.Verdict = models.Unknown
		res.Explanation = "the run did not complete: " + failed
	case unfinished != "" && res.Verdict == models.Valid:
		res.Verdict = models.Unknown
		res.Explanation = unfinished + ": no violation in what ran, but the run did not finish"
	case unfinished != "":
		// The check did not finish either: say both.
		res.Explanation = unfinished + "; and " + res.Explanation
	}
	return res
}
