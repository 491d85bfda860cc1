package models

import (
	"math"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/history"
)

// grant is an ok acquire of key with token, called at call and returned at ret.
func cutGrant(key string, token uint64, call, ret int64) history.Op {
	return history.Op{F: history.Acquire, Type: history.OK, Key: key, Token: token, Call: call, Return: ret}
}

func TestPowerCutsCountGrantsAfterEachCut(t *testing.T) {
	ops := []history.Op{
		cutGrant("k0", 1, 1e9, 2e9),
		cutGrant("k1", 2, 1e9, 3e9),
		cutGrant("k0", 3, 6e9, 7e9),   // after the first cut: k0 was granted before it
		cutGrant("k2", 4, 6e9, 7e9),   // k2 had no grant before the cut: nothing to contradict
		cutGrant("k1", 5, 12e9, 13e9), // after the second
		{F: history.Acquire, Type: history.Fail, Key: "k1", Call: 12e9, Return: 12e9},
		cutGrant("k0", 6, 4e9, 8e9), // called before the first cut began
	}
	faults := []history.Fault{
		{F: "power-loss", Nodes: []string{"n1"}, Start: 5e9, End: 9e9},
		{F: "pause", Nodes: []string{"n2"}, Start: 9e9, End: 10e9},
		{F: "power-loss", Nodes: []string{"n2"}, Start: 11e9, End: 14e9},
	}
	drops := []Drop{{Fault: "power-loss", Nodes: []string{"n1"}, Files: 1, Bytes: 4096}, {Fault: "power-loss", Nodes: []string{"n2"}, Files: 0, Bytes: 0}}
	p := CountPowerCuts(ops, faults, []string{"power-loss", "pause"}, drops)
	if p.Made != 2 || p.Failed != 0 || p.PostCutGrants != 2 || p.Cuts[0].PostCutGrants != 1 || p.Cuts[1].PostCutGrants != 1 {
		t.Fatalf("counts: %+v", p)
	}
	if p.DroppedFiles != 1 || p.DroppedBytes != 4096 || !p.DropsKnown || p.Cuts[1].Dropped == nil {
		t.Fatalf("drops: %+v", p)
	}
	if why := p.Unproven(); why != "" {
		t.Fatalf("a run granting after its cuts is proven: %s", why)
	}
	res := Result{Verdict: Valid}.WithPowerCuts(p)
	if res.Verdict != Valid || res.PowerCuts != p {
		t.Fatalf("valid stays valid: %+v", res)
	}
	if got := p.Text(); got != "2 power cuts, 2 post-cut grants; dropped 1 file, 4 KiB in all" {
		t.Errorf("text: %q", got)
	}
}

func TestPowerCutsWithoutGrantsAfterAreUnknown(t *testing.T) {
	ops := []history.Op{cutGrant("k0", 1, 1e9, 2e9)}
	faults := []history.Fault{{F: "power-loss-all", Nodes: []string{"n1", "n2", "n3"}, Start: 9.3e9, End: math.MaxInt64}}
	p := CountPowerCuts(ops, faults, []string{"power-loss-all"}, nil)
	res := Result{Verdict: Valid, Explanation: "x"}.WithPowerCuts(p)
	if res.Verdict != Unknown || !strings.Contains(res.Explanation, "the service granted nothing after the cut at 9.30 s") {
		t.Fatalf("no grant after the cut: %s %q", res.Verdict, res.Explanation)
	}
	if !strings.Contains(p.DropText(), "not recorded") {
		t.Errorf("a cut whose drop was not recorded: %q", p.DropText())
	}
	// An invalid verdict stays invalid.
	if r := (Result{Verdict: Invalid}).WithPowerCuts(p); r.Verdict != Invalid {
		t.Errorf("invalid became %s", r.Verdict)
	}
}

func TestPowerCutFailedIsUnknown(t *testing.T) {
	ops := []history.Op{cutGrant("k0", 1, 1e9, 2e9), cutGrant("k0", 2, 8e9, 9e9)}
	faults := []history.Fault{
		{F: "power-loss", Start: 3e9, End: 3e9, Error: "power-loss: dropping what n1 never synced: the layer answered \"\""},
		{F: "power-loss", Nodes: []string{"n1"}, Start: 5e9, End: 6e9},
		{F: "power-loss-leader", Start: 7e9, End: 7e9, Error: history.NothingToHit},
	}
	p := CountPowerCuts(ops, faults, []string{"power-loss", "power-loss-leader"}, []Drop{{Fault: "power-loss", Files: 2, Bytes: 10}})
	if p.Made != 1 || p.Failed != 1 || len(p.Cuts) != 2 || p.PostCutGrants != 1 {
		t.Fatalf("a failed cut and one found nothing to hit: %+v", p)
	}
	// The made cut is the fault's first drop: the failed one reported none.
	if p.Cuts[1].Dropped == nil || p.Cuts[1].Dropped.Files != 2 {
		t.Fatalf("drop of the made cut: %+v", p.Cuts[1])
	}
	res := Result{Verdict: Valid}.WithPowerCuts(p)
	if res.Verdict != Unknown || !strings.Contains(res.Explanation, "the power-loss at 3.00 s failed") {
		t.Fatalf("a failed cut: %s %q", res.Verdict, res.Explanation)
	}
}

func TestPowerCutsNoneAsked(t *testing.T) {
	if p := CountPowerCuts(nil, []history.Fault{{F: "kill", Start: 1, End: 2}}, []string{"kill"}, nil); p != nil {
		t.Fatalf("no power fault: %+v", p)
	}
	p := CountPowerCuts(nil, nil, []string{"power-loss"}, nil)
	if p == nil || !strings.HasPrefix(p.Unproven(), "no power cut was made") {
		t.Fatalf("asked, none made: %+v", p)
	}
	every := &PowerCuts{Made: 3, DropsKnown: true, PostCutGrants: 5}
	if !strings.Contains(every.Text(), "every cut dropped nothing") {
		t.Errorf("every cut dropped nothing: %q", every.Text())
	}
}

// A one-instant cut records its start, then cuts up to a second later: a
// grant called in between was acknowledged before the power went and
// proves nothing about the cut (NATS 7564's fixed row, seed 1: 17 grants
// credited to a cut that all came before its power went).
func TestPowerCutsCountGrantsOnlyAfterThePowerWent(t *testing.T) {
	ops := []history.Op{
		cutGrant("k0", 1, 1e9, 2e9),
		cutGrant("k0", 2, 5.2e9, 5.3e9), // after the announce, before the power went
		cutGrant("k0", 3, 9e9, 9.5e9),   // after the power went
	}
	faults := []history.Fault{{F: "power-loss-all", Nodes: []string{"n1", "n2", "n3"}, Start: 5e9, End: 8e9}}
	drops := []Drop{{Fault: "power-loss-all", Nodes: []string{"n1", "n2", "n3"}, Files: 3, Bytes: 12288, Went: 5.6e9}}
	p := CountPowerCuts(ops, faults, []string{"power-loss-all"}, drops)
	if p.PostCutGrants != 1 || p.Cuts[0].Went != 5.6e9 {
		t.Fatalf("want the one grant called after the power went: %+v", p)
	}
	only := CountPowerCuts(ops[:2], faults, []string{"power-loss-all"}, drops)
	if res := (Result{Verdict: Valid}).WithPowerCuts(only); res.Verdict != Unknown {
		t.Fatalf("a grant before the power went made the cut proven: %+v", res)
	}
}

// power-loss-majority is a power fault like the others: its cuts are
// counted with their drops, and a run that granted nothing after them is
// unknown. It was missing from powerFaults, so such a run had no
// power_cuts at all and stayed valid with nothing granted after a cut.
func TestPowerCutsOfAMajorityAreCounted(t *testing.T) {
	if !PowerFault("power-loss-majority") {
		t.Fatal("power-loss-majority is not a power fault")
	}
	ops := []history.Op{cutGrant("k0", 1, 1e9, 2e9)}
	faults := []history.Fault{{F: "power-loss-majority", Nodes: []string{"n1", "n3"}, Start: 5e9, End: 8e9}}
	drops := []Drop{{Fault: "power-loss-majority", Nodes: []string{"n1", "n3"}, Files: 2, Bytes: 8192, Went: 5.1e9}}
	p := CountPowerCuts(ops, faults, []string{"power-loss-majority"}, drops)
	if p == nil || p.Made != 1 || p.DroppedBytes != 8192 || p.PostCutGrants != 0 {
		t.Fatalf("a majority's cut: %+v", p)
	}
	res := Result{Verdict: Valid}.WithPowerCuts(p)
	if res.Verdict != Unknown || !strings.Contains(res.Explanation, "the service granted nothing after the cut at 5.00 s (power-loss-majority on n1 and n3)") {
		t.Fatalf("no grant after a majority's cut: %s %q", res.Verdict, res.Explanation)
	}
	after := CountPowerCuts(append(ops, cutGrant("k0", 2, 9e9, 9.5e9)), faults, []string{"power-loss-majority"}, drops)
	if res := (Result{Verdict: Valid}).WithPowerCuts(after); res.Verdict != Valid || after.PostCutGrants != 1 {
		t.Fatalf("a grant after a majority's cut: %s %+v", res.Verdict, after)
	}
}
