package verdict

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/models"
)

// An agreement that failed makes a valid check invalid, and stays beside
// a violation the check found; one that holds or was not decided changes
// nothing.
func TestSettleWithAgreement(t *testing.T) {
	broken := &models.Agreement{Verdict: models.Invalid, Explanation: "the service lost its token counter: the lock bucket"}
	valid := models.Result{Verdict: models.Valid, Keys: []models.KeyResult{{Key: "k0", Verdict: models.Valid}}}
	x := models.Exposures{}
	res := Settle(Run{Check: valid, Agreement: broken, Exposures: &x})
	if res.Verdict != models.Invalid || !strings.HasPrefix(res.Explanation, "at the end, the service lost its token counter") || res.Agreement != broken {
		t.Errorf("valid check, broken agreement: %s: %s", res.Verdict, res.Explanation)
	}
	// An unfinished run with a broken agreement is still invalid: the
	// servers lost what they acknowledged, whatever ran after.
	if res := Settle(Run{Check: valid, Agreement: broken, Unfinished: "interrupted"}); res.Verdict != models.Invalid {
		t.Errorf("unfinished: %s", res.Verdict)
	}
	invalid := models.Result{Verdict: models.Invalid, Explanation: "token 7 was granted twice", Keys: []models.KeyResult{{Key: "k0", Verdict: models.Invalid, Explanation: "token 7 was granted twice"}}}
	if res := Settle(Run{Check: invalid, Agreement: broken}); res.Verdict != models.Invalid || !strings.HasPrefix(res.Explanation, "token 7") {
		t.Errorf("invalid check: %s: %s", res.Verdict, res.Explanation)
	}
	for _, v := range []models.Verdict{models.Valid, models.Unknown} {
		a := &models.Agreement{Verdict: v, Explanation: "n1 and n2 hold the same state"}
		if res := Settle(Run{Check: valid, Agreement: a}); res.Verdict != models.Valid || res.Agreement != a {
			t.Errorf("agreement %s: %s", v, res.Verdict)
		}
	}
}
