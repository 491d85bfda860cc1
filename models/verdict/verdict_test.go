package verdict

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/models"
)

// Settle: a violation stands, anything else short of a finished run is
// unknown, and the reason is said.
func TestSettle(t *testing.T) {
	valid := models.Result{Verdict: models.Valid, Keys: []models.KeyResult{{Key: "k0", Verdict: models.Valid}}}
	invalid := models.Result{Verdict: models.Invalid, Explanation: "a stale write"}
	timedOut := models.Result{Verdict: models.Unknown, Explanation: "the check timed out"}
	cases := []struct {
		res                 models.Result
		incomplete, runErr  string
		skipped             bool
		verdict             models.Verdict
		explanationContains string
	}{
		{valid, "", "", false, models.Valid, ""},
		{valid, "interrupted after 3.1 s of the 1m0s workload", "", false, models.Unknown, "interrupted after 3.1 s of the 1m0s workload: no violation in what ran, but the run did not finish"},
		{valid, "", "the daemon went away", false, models.Unknown, "the run did not complete: the daemon went away"},
		{valid, "interrupted", "", true, models.Unknown, "the check was skipped"},
		{invalid, "interrupted", "the daemon went away", true, models.Invalid, "a stale write"},
		{timedOut, "interrupted during the final reads", "", false, models.Unknown, "interrupted during the final reads; and the check timed out"},
	}
	for i, c := range cases {
		got := Settle(Run{Check: c.res, Unfinished: c.incomplete, Failed: c.runErr, CheckSkipped: c.skipped})
		if got.Verdict != c.verdict || !strings.Contains(got.Explanation, c.explanationContains) {
			t.Errorf("case %d: %s %q, want %s containing %q", i, got.Verdict, got.Explanation, c.verdict, c.explanationContains)
		}
		if len(got.Keys) != len(c.res.Keys) {
			t.Errorf("case %d: the per-key results changed", i)
		}
		// A run that did not finish calls no key valid.
		for _, k := range got.Keys {
			if k.Verdict == models.Valid && (c.incomplete != "" || c.runErr != "" || c.skipped) {
				t.Errorf("case %d: key %s valid in a run that did not finish", i, k.Key)
			}
		}
	}
}

// The steps after the run's own: a valid verdict held to --min-exposures,
// a stopped re-check unknown unless it found a violation, and a stored
// verdict (the index, a merge) unknown once its history shows the run did
// not finish.
func TestSettleExposuresStoppedAndStored(t *testing.T) {
	valid := models.Result{Verdict: models.Valid}
	none := models.Exposures{}
	got := Settle(Run{Check: valid, Exposures: &none, MinExposures: 1})
	if got.Verdict != models.Unknown || !strings.Contains(got.Explanation, "fewer than --min-exposures 1") || got.Exposures == nil {
		t.Errorf("no exposure under --min-exposures 1: %s %q", got.Verdict, got.Explanation)
	}
	if got := Settle(Run{Check: valid, Exposures: &none}); got.Verdict != models.Valid || got.Exposures == nil {
		t.Errorf("no exposure under --min-exposures 0: %s %q, exposures %v", got.Verdict, got.Explanation, got.Exposures)
	}
	stop := errors.New("interrupted")
	if got := Settle(Run{Check: valid, Stopped: stop}); got.Verdict != models.Unknown || got.Explanation != "interrupted" {
		t.Errorf("a stopped re-check: %s %q, want unknown saying why", got.Verdict, got.Explanation)
	}
	invalid := models.Result{Verdict: models.Invalid, Explanation: "a stale write"}
	if got := Settle(Run{Check: invalid, Stopped: stop, Unfinished: "no end event"}); got.Verdict != models.Invalid || got.Explanation != "a stale write" {
		t.Errorf("a violation in a stopped re-check of an unfinished run: %s %q, want it to stand", got.Verdict, got.Explanation)
	}
	stored := Settle(Run{Check: models.Result{Verdict: models.Valid}, Unfinished: "results.json says valid, but no end event"})
	if stored.Verdict != models.Unknown || !strings.HasPrefix(stored.Explanation, "results.json says valid, but no end event") {
		t.Errorf("a stored valid run that did not finish: %s %q", stored.Verdict, stored.Explanation)
	}
}

// A streamed history is read again, through the reader its caller opens,
// only for an invalid verdict; a reader that cannot be opened leaves the
// result as the check gave it.
func TestSettleRereadsOnlyForAViolation(t *testing.T) {
	opened := 0
	reread := func() (io.ReadCloser, error) { opened++; return nil, errors.New("gone") }
	valid := models.Result{Verdict: models.Valid}
	if got := Settle(Run{Check: valid, Reread: reread}); got.Verdict != models.Valid || opened != 0 {
		t.Errorf("a valid check: %s, read again %d times", got.Verdict, opened)
	}
	invalid := models.Result{Verdict: models.Invalid, Explanation: "a stale write"}
	if got := Settle(Run{Check: invalid, Reread: reread}); got.Verdict != models.Invalid || got.Explanation != "a stale write" || opened != 1 {
		t.Errorf("an invalid check whose history cannot be read again: %s %q, read again %d times", got.Verdict, got.Explanation, opened)
	}
}
