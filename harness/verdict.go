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
	if v, ok := paramOf(params, "grant-after-each-crash"); ok {
		f.GrantAfterEachCrash = v == "true"
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

// historyEnd is the time of a history's last event.
func historyEnd(events []history.Event) int64 {
	if len(events) == 0 {
		return 0
	}
	return events[len(events)-1].Time
}
