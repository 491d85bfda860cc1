package reports

import (
	"math"
	"strconv"

	"github.com/fencecheck/fencecheck/models"
)

// The lease beliefs and their overlaps are pure functions of the ops; they
// live in models, where the damage figures use them too.
type (
	Belief  = models.Belief
	Holder  = models.Holder
	Overlap = models.Overlap
)

// ErrLeaseLost is the error of an op a client refused because it knew its
// lease was gone (docs/history.md).
const ErrLeaseLost = models.ErrLeaseLost

// Beliefs derives the lease beliefs from ops in invocation order (see
// models.Beliefs).
var Beliefs = models.Beliefs

// Overlaps finds, key by key, the intervals in which more than one belief
// was held (see models.Overlaps).
var Overlaps = models.Overlaps

// historyEnd is the time of the last thing the history knows.
func historyEnd(r *Run) int64 {
	var end int64
	if n := len(r.Events); n > 0 {
		end = r.Events[n-1].Time
	}
	for i := range r.Ops {
		end = max(end, r.Ops[i].Call, r.Ops[i].Done)
	}
	for _, f := range r.Faults {
		end = max(end, f.Start)
		if f.End != math.MaxInt64 {
			end = max(end, f.End)
		}
	}
	return end
}

// holderList renders holders as "process 1 (token 58) and process 2 (token 112)".
func holderList(hs []Holder) string {
	s := ""
	for i, h := range hs {
		switch {
		case i == 0:
		case i == len(hs)-1:
			s += " and "
		default:
			s += ", "
		}
		s += "process " + strconv.Itoa(h.Process)
		if h.Token != 0 {
			s += " (token " + strconv.FormatUint(h.Token, 10) + ")"
		}
	}
	return s
}
