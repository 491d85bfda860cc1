package models

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
)

// RunFacts are what a run asked for and what its history shows, enough
// to guess why it put safety at stake nowhere.
type RunFacts struct {
	// Nemesis are the faults asked for (--nemesis); empty or "none" when
	// none were.
	Nemesis []string
	// Faults are the fault intervals the history holds.
	Faults []history.Fault
	// LeaseTTL is the lease length asked for; 0 when not known.
	LeaseTTL time.Duration
	// Slots is the number of client containers (process p runs in
	// history.SlotOf(p, Slots)); 0 when not known.
	Slots int
	// Beliefs are when each process believed it held a lease (Beliefs);
	// nil when not known.
	Beliefs []Belief
	// GrantAfterEachCrash: the run asked for a grant after every crash,
	// not only after one (--grant-after-each-crash; Crashes.Unproven).
	GrantAfterEachCrash bool
}

// NoExposureReason is the likely reason a run had no exposure, from the
// first of these that holds, or "" when it had exposures or none holds:
// no fault was asked for; pause-holder never found a holder stopped at
// its failpoint (a client that ignores stop); no fault was injected; no
// fault that freezes or cuts off a client struck one while it held a
// lease; every fault ended sooner than a lease runs out; holders were
// superseded but sent nothing late.
func NoExposureReason(c ExposureCounts, f RunFacts) string {
	if c.Exposures > 0 {
		return ""
	}
	asked := slices.DeleteFunc(slices.Clone(f.Nemesis), func(s string) bool { return s == "" || s == "none" })
	if len(asked) == 0 {
		return "no fault was asked for: --nemesis none"
	}
	injected := map[string]int{}
	for _, ft := range f.Faults {
		if len(ft.Nodes) > 0 && ft.Error == "" {
			injected[ft.F]++
		}
	}
	if slices.Contains(asked, "pause-holder") && injected["pause-holder"] == 0 {
		return "pause-holder froze no one: no holder stopped at its failpoint between its lease check and its write, and a client that ignores \"stop\" is never frozen by it"
	}
	if len(injected) == 0 {
		return "no fault was injected while the workload ran (a longer --time-limit or a shorter --nemesis-interval gives the nemesis time)"
	}
	if reason := missedHolders(f); reason != "" {
		return reason
	}
	if f.LeaseTTL > 0 {
		longest := int64(0)
		for _, ft := range f.Faults {
			if ft.End == math.MaxInt64 || ft.Error != "" {
				continue
			}
			longest = max(longest, ft.End-ft.Start)
		}
		if longest > 0 && time.Duration(longest) < f.LeaseTTL {
			return fmt.Sprintf("every fault ended before a lease could run out (the longest held %s s, the lease is %s)", history.Seconds(longest), f.LeaseTTL)
		}
	}
	if c.OutlivedIdle > 0 {
		return fmt.Sprintf("%s outlived by a successor, but none sent an op after the successor's grant", words.PluralOf(c.OutlivedIdle, "holder was", "holders were"))
	}
	return "the faults injected never left a holder acting after its lease had passed to another"
}

// missedHolders says that the faults aimed at clients (whose nodes are
// client slots) never overlapped a time one of those clients held a lease,
// when that is so and can be told.
func missedHolders(f RunFacts) string {
	if f.Slots <= 0 || f.Beliefs == nil {
		return ""
	}
	clientFaults, hit := 0, 0
	for _, ft := range f.Faults {
		if ft.Error != "" || len(ft.Nodes) == 0 || !allSlots(ft.Nodes) {
			continue
		}
		clientFaults++
		for _, b := range f.Beliefs {
			if slices.Contains(ft.Nodes, history.SlotOf(b.Process, f.Slots)) && b.Start < ft.End && ft.Start < b.End {
				hit++
				break
			}
		}
	}
	if clientFaults == 0 || hit > 0 || len(f.Faults) != clientFaults {
		return ""
	}
	return fmt.Sprintf("the %s struck clients only between their critical sections, never while one held a lease", words.Plural(clientFaults, "fault"))
}

func allSlots(nodes []string) bool {
	for _, n := range nodes {
		if !strings.HasPrefix(n, "c") {
			return false
		}
	}
	return true
}
