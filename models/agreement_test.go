package models

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/history"
)

// natsGrants are grants of two keys as a NATS bucket hands them out: the
// token is the message's stream sequence, one counter for the bucket.
func natsGrants() []history.Op {
	a := grant(1, 3, 0.1, 0.2, 0)
	b := grant(2, 7, 1.0, 1.1, 2)
	b.Key = "k1"
	c := grant(1, 12, 2.0, 2.1, 4)
	failed := history.Op{Process: 3, F: history.Acquire, Key: "k0", Type: history.Fail, Token: 99, Call: 3e9, Return: 3.1e9, InvokeIndex: 6}
	return []history.Op{a, b, c, failed}
}

// Members that hold the same state and a counter at or past the highest
// token acknowledged agree; the failed acquire's token counts for nothing.
func TestAgreementHolds(t *testing.T) {
	st := ServiceState{Query: "q", Members: []MemberState{
		{Node: "n1", State: "stream KV_fencecheck with sequences 1 to 14, 2 messages"},
		{Node: "n2", State: "stream KV_fencecheck with sequences 1 to 14, 2 messages"},
		{Node: "n3", State: "stream KV_fencecheck with sequences 1 to 14, 2 messages"},
	}, Counters: []ServiceCounter{{What: "the bucket's last sequence", Value: 14, Node: "n1"}}}
	a := CheckAgreement(st, natsGrants())
	if a.Verdict != Valid || len(a.Diverged) != 0 {
		t.Fatalf("got %s: %s", a.Verdict, a.Explanation)
	}
	if c := a.Counters[0]; c.Acknowledged != 12 || c.AckProcess != 1 || c.AckKey != "k0" || c.WentBack {
		t.Errorf("counter check %+v, want token 12 of process 1 on k0 held", c)
	}
	for _, s := range []string{"n1, n2 and n3 hold the same state", "is 14, at least token 12"} {
		if !strings.Contains(a.Explanation, s) {
			t.Errorf("explanation %q lacks %q", a.Explanation, s)
		}
	}
}

// NATS under power-loss-all with its default sync: the bucket's stream is
// gone from every server. Nothing was granted after the cut, yet the
// service lost every revision it handed out: invalid.
func TestAgreementBucketGone(t *testing.T) {
	st := ServiceState{Members: []MemberState{
		{Node: "n1", State: "no stream KV_fencecheck"}, {Node: "n2", State: "no stream KV_fencecheck"}, {Node: "n3", State: "no stream KV_fencecheck"},
	}, Counters: []ServiceCounter{{What: "the lock bucket fencecheck (stream KV_fencecheck)", Gone: "no server that answered holds the stream KV_fencecheck"}}}
	a := CheckAgreement(st, natsGrants())
	if a.Verdict != Invalid || !a.Counters[0].WentBack {
		t.Fatalf("got %s: %s", a.Verdict, a.Explanation)
	}
	want := "the service lost its token counter: the lock bucket fencecheck (stream KV_fencecheck) is gone (no server that answered holds the stream KV_fencecheck), though it had acknowledged token 12 at 2.10 s (to process 1 on key k0)"
	if a.Explanation != want {
		t.Errorf("explanation\n%s\nwant\n%s", a.Explanation, want)
	}
}

// etcd's revision below a token it acknowledged: the counter went back,
// even though every member agrees on the (shorter) history.
func TestAgreementCounterWentBack(t *testing.T) {
	ops := []history.Op{grant(1, 448, 10, 10.2, 0), grant(2, 450, 11, 11.1, 2)}
	st := ServiceState{Members: []MemberState{
		{Node: "n1", State: "HashKV 0x1 at revision 40"}, {Node: "n2", State: "HashKV 0x1 at revision 40"},
	}, Counters: []ServiceCounter{{What: "the store's revision", Value: 40, Node: "n2"}}}
	a := CheckAgreement(st, ops)
	if a.Verdict != Invalid {
		t.Fatalf("got %s: %s", a.Verdict, a.Explanation)
	}
	if want := "the service's token counter went back: the store's revision is 40 on n2, below token 450, acknowledged at 11.10 s (to process 2 on key k0)"; a.Explanation != want {
		t.Errorf("explanation\n%s\nwant\n%s", a.Explanation, want)
	}
}

// A per-key counter is held to its own key's tokens only.
func TestAgreementPerKeyCounter(t *testing.T) {
	st := ServiceState{Members: []MemberState{{Node: "n1", Detail: "master"}},
		Counters: []ServiceCounter{{Key: "k0", What: "the counter fencecheck:token:{k0}", Value: 12}, {Key: "k1", What: "the counter fencecheck:token:{k1}", Value: 6}}}
	a := CheckAgreement(st, natsGrants())
	if a.Verdict != Invalid || a.Counters[0].WentBack || !a.Counters[1].WentBack || a.Counters[1].Acknowledged != 7 {
		t.Fatalf("got %s: %s; %+v", a.Verdict, a.Explanation, a.Counters)
	}
}

// Members that diverge are named with what each holds; the largest group
// is the service's and the others diverged from it. A member that did not
// answer is neither.
func TestAgreementDiverged(t *testing.T) {
	st := ServiceState{Members: []MemberState{
		{Node: "n1", State: "HashKV 0xaa at revision 812"}, {Node: "n2", State: "HashKV 0xbb at revision 812"},
		{Node: "n3", State: "HashKV 0xaa at revision 812"}, {Node: "n4", Error: "n4: exit 124"},
	}}
	a := CheckAgreement(st, nil)
	if a.Verdict != Invalid || len(a.Diverged) != 1 || a.Diverged[0] != "n2" || len(a.Silent) != 1 {
		t.Fatalf("got %s (%v, silent %v): %s", a.Verdict, a.Diverged, a.Silent, a.Explanation)
	}
	want := "the members diverged: n1 and n3 hold HashKV 0xaa at revision 812; n2 holds HashKV 0xbb at revision 812 (n4 did not answer)"
	if a.Explanation != want {
		t.Errorf("explanation\n%s\nwant\n%s", a.Explanation, want)
	}
	// Two against two: no group is the service's, every member is named.
	st.Members[3] = MemberState{Node: "n4", State: "HashKV 0xbb at revision 812"}
	if a := CheckAgreement(st, nil); len(a.Diverged) != 4 {
		t.Errorf("a tie names %v, want all four", a.Diverged)
	}
}

// Too few answers decide nothing, and the run's verdict stays the check's.
func TestAgreementUnknown(t *testing.T) {
	st := ServiceState{Members: []MemberState{{Node: "n1", State: "zxid 0x100000005"}, {Node: "n2", Error: "timeout"}, {Node: "n3", Error: "timeout"}}}
	if a := CheckAgreement(st, nil); a.Verdict != Unknown {
		t.Errorf("one answer of three: %s (%s)", a.Verdict, a.Explanation)
	}
	if a := CheckAgreement(ServiceState{}, nil); a.Verdict != Unknown {
		t.Errorf("no answer: %s", a.Verdict)
	}
}

// A stored agreement is checked again from what the servers said.
func TestAgreementRecheck(t *testing.T) {
	st := ServiceState{Members: []MemberState{{Node: "n1", State: "s"}, {Node: "n2", State: "s"}},
		Counters: []ServiceCounter{{What: "the store's revision", Value: 10}}}
	a := CheckAgreement(st, nil)
	if a.Verdict != Valid {
		t.Fatalf("no grant: %s", a.Explanation)
	}
	if b := a.Recheck(natsGrants()); b.Verdict != Invalid {
		t.Errorf("rechecked against tokens up to 12: %s", b.Verdict)
	}
	var none *Agreement
	if none.Recheck(nil) != nil {
		t.Error("nil rechecked is not nil")
	}
}
