package verdict

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/history"
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

// After a crash, a valid check whose servers none answered at the end is
// unknown: the service may have lost everything it acknowledged (seen in
// CI: etcd with --unsafe-no-fsync under power-loss-all, every member
// silent after the second cut). Without a crash, or with one member
// answering, an undecided agreement changes nothing.
func TestSettleNoServerAnsweredAfterACrash(t *testing.T) {
	silent := models.CheckAgreement(models.ServiceState{Query: "HashKV", Members: []models.MemberState{
		{Node: "n1", Error: "exit 124"}, {Node: "n2", Error: "exit 124"}, {Node: "n3", Error: "exit 124"}}}, nil)
	if silent.Verdict != models.Unknown {
		t.Fatalf("every member silent: agreement %s, want unknown", silent.Verdict)
	}
	valid := models.Result{Verdict: models.Valid, Explanation: "no violation"}
	cut := []history.Fault{{F: "power-loss-all", Nodes: []string{"n1", "n2", "n3"}, Start: 1e9, End: 5e9}}
	res := Settle(Run{Check: valid, Agreement: &silent, Facts: models.RunFacts{Faults: cut}})
	if res.Verdict != models.Unknown || !strings.HasPrefix(res.Explanation, "no server answered at the end, after the power-loss-all") {
		t.Errorf("silent after a power cut: %s: %s", res.Verdict, res.Explanation)
	}
	pause := []history.Fault{{F: "pause", Nodes: []string{"c1"}, Start: 1e9, End: 5e9}}
	if res := Settle(Run{Check: valid, Agreement: &silent, Facts: models.RunFacts{Faults: pause}}); res.Verdict != models.Valid {
		t.Errorf("silent with no crash: %s: %s", res.Verdict, res.Explanation)
	}
	one := models.CheckAgreement(models.ServiceState{Query: "HashKV", Members: []models.MemberState{
		{Node: "n1", State: "0xaa"}, {Node: "n2", Error: "exit 124"}, {Node: "n3", Error: "exit 124"}}}, nil)
	if res := Settle(Run{Check: valid, Agreement: &one, Facts: models.RunFacts{Faults: cut}}); res.Verdict == models.Unknown && strings.HasPrefix(res.Explanation, "no server answered") {
		t.Errorf("one member answered, yet: %s", res.Explanation)
	}
}
