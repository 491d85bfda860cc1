package verdict

import (
	"fmt"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// withAgreement attaches what the servers held at the end to the result.
// Members that diverged or a counter that went back is a violation: it
// stands like one the check found, and an invalid verdict already found
// keeps its cause first. An agreement that could not be decided changes
// nothing.
//
// One undecided agreement does change a VALID: after a crash (a kill, a
// power cut, a failpoint) no member answered at all. Whether the service
// still holds what it acknowledged is then not known — a service that
// lost its every member's data can look exactly like that — so the run
// is unknown, not valid.
func withAgreement(res models.Result, a *models.Agreement, faults []history.Fault) models.Result {
	if a == nil {
		return res
	}
	res.Agreement = a
	if a.Verdict == models.Unknown && res.Verdict == models.Valid && len(a.Members) > 0 && len(a.Silent) == len(a.Members) {
		for _, f := range faults {
			if models.Crash(f.F) {
				res.Verdict = models.Unknown
				res.Explanation = fmt.Sprintf("no server answered at the end, after the %s: whether the service still holds what it acknowledged is not known (%s)", f.F, a.Explanation)
				return res
			}
		}
	}
	if a.Verdict != models.Invalid {
		return res
	}
	if res.Verdict == models.Invalid {
		return res
	}
	res.Verdict = models.Invalid
	res.Explanation = "at the end, " + a.Explanation
	return res
}
