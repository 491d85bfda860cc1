package verdict

import "github.com/fencecheck/fencecheck/models"

// withAgreement attaches what the servers held at the end to the result.
// Members that diverged or a counter that went back is a violation: it
// stands like one the check found, and an invalid verdict already found
// keeps its cause first. An agreement that could not be decided changes
// nothing.
func withAgreement(res models.Result, a *models.Agreement) models.Result {
	if a == nil {
		return res
	}
	res.Agreement = a
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
