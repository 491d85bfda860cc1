package models

import (
	"math"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/history"
)

func TestCrashesCountGrantsAfterEachCrashHealed(t *testing.T) {
	ops := []history.Op{
		cutGrant("k0", 1, 1e9, 2e9),
		cutGrant("k0", 2, 6e9, 7e9),   // during the first crash (before its restart): not after it
		cutGrant("k0", 3, 10e9, 10e9), // after the first crash's end, before the second
		cutGrant("k1", 4, 10e9, 11e9), // k1 had no grant before the crash
		cutGrant("k0", 5, 20e9, 21e9), // after the second
	}
	faults := []history.Fault{
		{F: "kill", Nodes: []string{"n1"}, Start: 5e9, End: 9e9},
		{F: "pause", Nodes: []string{"n2"}, Start: 9e9, End: 10e9}, // no crash
		{F: "failpoint", Nodes: []string{"n1"}, Start: 15e9, End: 18e9},
		{F: "kill", Start: 19e9, End: 19e9, Error: history.NothingToHit}, // found nothing: no crash
	}
	c := CountCrashes(ops, faults, nil)
	if c.Made != 2 || c.WithoutGrant != 0 || c.GrantsAfter != 2 || c.Spans[0].GrantsAfter != 1 || c.Spans[1].GrantsAfter != 1 {
		t.Fatalf("counts: %+v", c)
	}
	if !c.EachGranted() || c.Unproven(false) != "" {
		t.Fatalf("granted after each crash: %+v %q", c, c.Unproven(false))
	}
	if got := c.Text(); got != "2 crashes, each followed by a grant (2 grants after)" {
		t.Errorf("text: %q", got)
	}
	if res := (Result{Verdict: Valid}).WithCrashes(c, false); res.Verdict != Valid || res.Crashes != c {
		t.Fatalf("valid stays valid: %+v", res)
	}
}

func TestCrashesOneWithoutGrantIsReportedAndNoneAfterAnyIsUnknown(t *testing.T) {
	ops := []history.Op{cutGrant("k0", 1, 1e9, 2e9), cutGrant("k0", 2, 10e9, 11e9)}
	faults := []history.Fault{
		{F: "kill-leader", Nodes: []string{"n2"}, Start: 5e9, End: 9e9},
		{F: "kill-leader", Nodes: []string{"n3"}, Start: 12.3e9, End: math.MaxInt64}, // never healed
	}
	c := CountCrashes(ops, faults, nil)
	if c.EachGranted() || c.WithoutGrant != 1 || c.Unproven(false) != "" {
		t.Fatalf("one crash granted after, one not: %+v", c)
	}
	if got := c.Text(); !strings.Contains(got, "1 not followed by a grant (begun at 12.30 s)") {
		t.Errorf("text: %q", got)
	}
	each := Result{Verdict: Valid}.WithCrashes(c, true)
	if each.Verdict != Unknown || !strings.Contains(each.Explanation, "granted nothing after the crash at 12.30 s (kill-leader on n3), one of 2 crashes") {
		t.Fatalf("--grant-after-each-crash: %s %q", each.Verdict, each.Explanation)
	}
	none := CountCrashes(ops[:1], faults, nil)
	res := Result{Verdict: Valid}.WithCrashes(none, false)
	if res.Verdict != Unknown || !strings.Contains(res.Explanation, "granted nothing after any of its 2 crashes (the first, kill-leader on n2 at 5.00 s)") {
		t.Fatalf("nothing after any crash: %s %q", res.Verdict, res.Explanation)
	}
	if inv := (Result{Verdict: Invalid}).WithCrashes(none, false); inv.Verdict != Invalid {
		t.Fatalf("an invalid verdict stands: %+v", inv)
	}
	if CountCrashes(ops, []history.Fault{{F: "pause", Start: 1, End: 2}}, nil) != nil {
		t.Fatal("no crash: nil")
	}
}

// A one-instant power cut records its start before its power goes: a
// grant acknowledged in between could be lost by it, so a grant after the
// cut's heal counts against it (CI's etcd power-loss-all run: the fault
// began at 1.00 s, the power went at 1.3 s, the first grant came back at
// 1.1 s, and the final read's grant after the heal was not counted).
func TestCrashesCountAPowerCutFromWhenItsPowerWent(t *testing.T) {
	ops := []history.Op{
		cutGrant("k0", 1, 0.5e9, 1.1e9),
		cutGrant("k0", 2, 14e9, 14.2e9), // the final read, after the heal
	}
	faults := []history.Fault{{F: "power-loss-all", Nodes: []string{"n1", "n2", "n3"}, Start: 1e9, End: 11e9}}
	if c := CountCrashes(ops, faults, nil); c.GrantsAfter != 0 {
		t.Fatalf("without the drop's time, the grant at 1.1 s is after the cut's start: %+v", c)
	}
	drops := []Drop{{Fault: "power-loss-all", Nodes: []string{"n1", "n2", "n3"}, Went: 1.3e9}}
	c := CountCrashes(ops, faults, drops)
	if c.GrantsAfter != 1 || c.WithoutGrant != 0 || c.Unproven(false) != "" {
		t.Fatalf("the grant at 1.1 s came before the power went at 1.3 s, and the final read's after the heal: %+v %q", c, c.Unproven(false))
	}
}
