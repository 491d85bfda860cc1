package harness

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/reports"
)

// DefaultMinExposures is --min-exposures when it is not given: 1 under a
// fault aimed at a lease holder, whose whole point is to put safety at
// stake (a run under it that never did missed its point and is not a
// pass), and 0 otherwise — a baseline with no fault, or a random fault
// that may or may not strike a holder, still says in its verdict that
// it was not exercised (docs/results.md).
func DefaultMinExposures(faults []string) int {
	if nemesis.AimedAtHolders(faults) {
		return 1
	}
	return 0
}

// Exposed counts a run's exposures from its events, says why there were
// none when there were none, and holds the verdict to min (see
// models.Result.WithExposures). The run, `check report` and `check
// analyze` all settle their exposures here.
func Exposed(res models.Result, events []history.Event, facts models.RunFacts, min int) models.Result {
	x := models.CountExposures(events)
	return Exposures(res, x, facts, min)
}

// Exposures is Exposed for exposures already counted (a history read as
// a stream counts them as it goes).
func Exposures(res models.Result, x models.Exposures, facts models.RunFacts, min int) models.Result {
	x.Reason = models.NoExposureReason(x.ExposureCounts, facts)
	return res.WithExposures(x, min)
}

// RunFactsOf are the facts about a run that explain a lack of exposures,
// from what a stored run's parameters and history say.
func RunFactsOf(params []reports.Param, ops []history.Op, faults []history.Fault, end int64) models.RunFacts {
	f := models.RunFacts{Faults: faults, Beliefs: models.Beliefs(ops, end)}
	if v, ok := paramOf(params, "nemesis"); ok {
		f.Nemesis = splitFaults(v)
	}
	if v, ok := paramOf(params, "lease-ttl"); ok {
		f.LeaseTTL, _ = time.ParseDuration(v)
	}
	if v, ok := paramOf(params, "clients"); ok {
		f.Slots, _ = strconv.Atoi(v)
	}
	return f
}

// MinExposuresOf is the --min-exposures a stored run was held to: its
// parameter, or (a run from before the parameter) the default for its
// faults.
func MinExposuresOf(params []reports.Param) int {
	if v, ok := paramOf(params, "min-exposures"); ok {
		if n, err := strconv.Atoi(v); err == nil && n >= 0 {
			return n
		}
	}
	v, _ := paramOf(params, "nemesis")
	return DefaultMinExposures(splitFaults(v))
}

func paramOf(params []reports.Param, name string) (string, bool) {
	i := slices.IndexFunc(params, func(p reports.Param) bool { return p.Name == name })
	if i < 0 {
		return "", false
	}
	return params[i].Value, true
}

func splitFaults(s string) []string {
	return slices.DeleteFunc(strings.Split(s, ","), func(f string) bool { return f == "" })
}

// Settle is the verdict of a run, from the check's result and how the run
// went; `check report` settles a stored run the same way. A violation the
// check found stands whatever happened: the history that shows it is real.
// Anything else is unknown when the check was skipped (checkSkipped: a
// second interrupt), the run could not be carried out (runErr), or the run
// was incomplete (incomplete: the workload did not reach its time limit, or
// the final reads did not happen or were cut short) — "no violation in the
// seconds that ran" is information, not a verdict. Per-key results are
// kept as they are.
func Settle(res models.Result, incomplete, runErr string, checkSkipped bool) models.Result {
	res = settleVerdict(res, incomplete, runErr, checkSkipped)
	if res.Verdict != models.Unknown || (incomplete == "" && runErr == "" && !checkSkipped) {
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

// settleVerdict is Settle's run-level verdict and explanation.
func settleVerdict(res models.Result, incomplete, runErr string, checkSkipped bool) models.Result {
	if res.Verdict == models.Invalid {
		return res
	}
	switch {
	case checkSkipped:
		res.Verdict = models.Unknown
		res.Explanation = "the check was skipped: interrupted a second time"
	case runErr != "":
		res.Verdict = models.Unknown
		res.Explanation = "the run did not complete: " + runErr
	case incomplete != "" && res.Verdict == models.Valid:
		res.Verdict = models.Unknown
		res.Explanation = incomplete + ": no violation in what ran, but the run did not finish"
	case incomplete != "":
		// The check did not finish either: say both.
		res.Explanation = incomplete + "; and " + res.Explanation
	}
	return res
}

// historyEnd is the time of a history's last event.
func historyEnd(events []history.Event) int64 {
	if len(events) == 0 {
		return 0
	}
	return events[len(events)-1].Time
}
