package models

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/history"
)

// grant is an ok acquire of k0 for the contradiction tests, times in
// seconds.
func grant(p int, token uint64, call, ret float64, index int64) history.Op {
	return history.Op{Process: p, F: history.Acquire, Key: "k0", Type: history.OK, Token: token,
		Call: int64(call * 1e9), Return: int64(ret * 1e9), InvokeIndex: index, CompleteIndex: index + 1}
}

// wantContradictions compares the counts, Grants aside (tests that care
// check it themselves).
func wantContradictions(t *testing.T, got Contradictions, want ContradictionCounts) {
	t.Helper()
	want.Grants = got.Grants
	if got.ContradictionCounts != want {
		t.Errorf("counts %+v, want %+v", got.ContradictionCounts, want)
	}
	if len(got.Keys) > 1 || (len(got.Keys) == 1 && got.Keys[0].ContradictionCounts != want) {
		t.Errorf("per key %+v, want one key with %+v", got.Keys, want)
	}
	if n := len(got.List); n != want.GrantedTwice+want.WentDown {
		t.Errorf("%d listed, want %d: %+v", n, want.GrantedTwice+want.WentDown, got.List)
	}
}

var powerLoss = history.Fault{F: "power-loss", Nodes: []string{"n2"}, Start: 5e9, End: 8e9}

// Correct histories count nothing: tokens that only increase, and grants
// whose intervals overlap, whatever their tokens (the service may have
// granted the higher one first); a recipe without tokens is never counted.
func TestNoContradictionInCorrectHistories(t *testing.T) {
	for name, ops := range map[string][]history.Op{
		"increasing": {grant(1, 1, 0, 1, 0), grant(2, 2, 2, 3, 2), grant(1, 5, 4, 5, 4)},
		// B (token 3) was called at 5 s, before A (token 5) returned at 10 s.
		"overlapping":    {grant(1, 5, 0, 10, 0), grant(2, 3, 5, 15, 2)},
		"equal instants": {grant(1, 5, 0, 5, 0), grant(2, 3, 5, 6, 2)},
		"tokenless":      {grant(1, 0, 0, 1, 0), grant(2, 0, 2, 3, 2), grant(3, 0, 4, 5, 4)},
	} {
		t.Run(name, func(t *testing.T) {
			wantContradictions(t, CountContradictions(ops, []history.Fault{powerLoss}), ContradictionCounts{})
			var relevant []*history.Op
			for _, o := range ptrs(ops) {
				if Relevant(o) {
					relevant = append(relevant, o)
				}
			}
			if _, _, bad := checkGrants(relevant); bad {
				t.Error("the check finds these grants out of order")
			}
		})
	}
}

// A token granted twice, and a token going down, are each counted, with
// the crash between them when there is one.
func TestContradictionsCounted(t *testing.T) {
	twice := []history.Op{grant(1, 7, 0, 1, 0), grant(2, 7, 9, 10, 2)}
	x := CountContradictions(twice, []history.Fault{powerLoss})
	wantContradictions(t, x, ContradictionCounts{Contradicted: 1, GrantedTwice: 1, AfterCrash: 1})
	c := x.List[0]
	if c.Kind != GrantedTwice || c.Token != 7 || c.Process != 1 || c.Time != 1e9 || c.LaterProcess != 2 || c.LaterTime != 10e9 ||
		c.Crash != "power-loss on n2" || c.CrashTime != 5e9 || c.CrashesBetween != 1 {
		t.Errorf("listed %+v", c)
	}
	// The same without a crash between: a pause is no crash, and a crash
	// before the acknowledgement lost nothing of it.
	for _, f := range []history.Fault{{F: "pause", Start: 5e9, End: 6e9}, {F: "kill", Start: 0.5e9, End: 6e9}} {
		x = CountContradictions(twice, []history.Fault{f})
		wantContradictions(t, x, ContradictionCounts{Contradicted: 1, GrantedTwice: 1})
		if x.List[0].Crash != "" {
			t.Errorf("%s: crash named: %+v", f.F, x.List[0])
		}
	}

	// Token 9 returned at 1 s; token 4 was asked for at 2 s.
	down := []history.Op{grant(1, 9, 0, 1, 0), grant(2, 4, 2, 3, 2)}
	x = CountContradictions(down, nil)
	wantContradictions(t, x, ContradictionCounts{Contradicted: 1, WentDown: 1})
	if c := x.List[0]; c.Kind != WentDown || c.Token != 9 || c.LaterToken != 4 {
		t.Errorf("listed %+v", c)
	}

	// A counter rolled back by a power loss: 8, 9, 10 granted, the cut at
	// 5 s, then 8, 9, 10, 11 again. 8 and 9 went down below 10 and were
	// granted twice; 10 was granted twice; 11 is fine.
	roll := []history.Op{grant(1, 8, 0, 1, 0), grant(2, 9, 1, 2, 2), grant(1, 10, 2, 3, 4),
		grant(2, 8, 9, 10, 6), grant(1, 9, 10, 11, 8), grant(2, 10, 11, 12, 10), grant(1, 11, 12, 13, 12)}
	x = CountContradictions(roll, []history.Fault{powerLoss, {F: "kill", Nodes: []string{"n1"}, Start: 6e9, End: 7e9}})
	wantContradictions(t, x, ContradictionCounts{Contradicted: 3, GrantedTwice: 3, WentDown: 2, AfterCrash: 3})
	if c := x.List[0]; c.CrashesBetween != 2 || c.Crash != "power-loss on n2" {
		t.Errorf("first listed %+v", c)
	}
	if got := x.Text(); got != "3 of 7 acknowledged grants were contradicted (3 tokens granted twice, 2 tokens went down; 3 after a crash)" {
		t.Errorf("text %q", got)
	}
	if got := x.Short(); got != "3 contradicted grants: 3 tokens granted twice, 2 tokens went down" {
		t.Errorf("short %q", got)
	}
	for c, want := range map[ContradictionCounts]string{
		{}:          "no grant carried a token, so none could be contradicted",
		{Grants: 1}: "none of 1 acknowledged grant was contradicted",
		{Grants: 5, Contradicted: 1, WentDown: 1}: "1 of 5 acknowledged grants was contradicted (1 token went down)",
	} {
		if got := c.Text(); got != want {
			t.Errorf("text %q, want %q", got, want)
		}
	}
}

// Per key and total; only grants count (failed and unknown acquires,
// reads and writes do not).
func TestContradictionsPerKey(t *testing.T) {
	ops := []history.Op{grant(1, 3, 0, 1, 0), grant(2, 3, 2, 3, 2), grant(3, 3, 4, 5, 4)}
	other := grant(4, 5, 0, 1, 6)
	other.Key = "k1"
	down := grant(5, 2, 2, 3, 8)
	down.Key = "k1"
	failed := grant(6, 3, 6, 7, 10)
	failed.Type = history.Fail
	unknown := grant(7, 3, 6, math.MaxInt64/1e9, 12)
	unknown.Type, unknown.Return = history.Info, math.MaxInt64
	write := history.Op{Process: 8, F: history.Write, Key: "k0", Type: history.OK, Token: 3, Call: 8e9, Return: 9e9, InvokeIndex: 14}
	ops = append(ops, other, down, failed, unknown, write)
	x := CountContradictions(ops, nil)
	want := ContradictionCounts{Grants: 5, Contradicted: 3, GrantedTwice: 2, WentDown: 1}
	if x.ContradictionCounts != want || len(x.Keys) != 2 ||
		x.Keys[0].Key != "k0" || x.Keys[0].ContradictionCounts != (ContradictionCounts{Grants: 3, Contradicted: 2, GrantedTwice: 2}) ||
		x.Keys[1].Key != "k1" || x.Keys[1].ContradictionCounts != (ContradictionCounts{Grants: 2, Contradicted: 1, WentDown: 1}) {
		t.Errorf("%+v", x)
	}
}

// Both ways, on random grants: a key has a contradicted grant exactly when
// the check finds its grants out of token order.
func TestContradictionsAgreeWithTheCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(46, 4))
	kinds := map[bool]int{}
	for round := 0; round < 5000; round++ {
		n := 1 + rng.IntN(8)
		var ops []history.Op
		for i := 0; i < n; i++ {
			call := rng.Int64N(100)
			ops = append(ops, history.Op{Process: i, F: history.Acquire, Key: "k0", Type: history.OK,
				Token: uint64(1 + rng.IntN(n+1)), Call: call, Return: call + rng.Int64N(30), InvokeIndex: int64(2 * i)})
		}
		x := CountContradictions(ops, nil)
		_, _, bad := checkGrants(ptrs(ops))
		if (x.Contradicted > 0) != bad {
			t.Fatalf("round %d: %+v, check bad=%v, grants %+v", round, x.ContradictionCounts, bad, ops)
		}
		if x.Contradicted > x.GrantedTwice+x.WentDown || x.Contradicted < max(x.GrantedTwice, x.WentDown) {
			t.Fatalf("round %d: counts do not add up: %+v", round, x.ContradictionCounts)
		}
		// The streaming check agrees too.
		k := newKeyCheck("k0", 0)
		for i := range ops {
			k.add(&ops[i])
		}
		k.advance(0, 0, true)
		if k.grantBad != bad {
			t.Fatalf("round %d: streaming bad=%v, checkGrants bad=%v", round, k.grantBad, bad)
		}
		kinds[bad]++
	}
	if kinds[true] == 0 || kinds[false] == 0 {
		t.Fatalf("not varied: %v", kinds)
	}
}

func ptrs(ops []history.Op) []*history.Op {
	out := make([]*history.Op, len(ops))
	for i := range ops {
		out[i] = &ops[i]
	}
	return out
}

// The story tells the crash between the grant acknowledged and the one
// that contradicted it, and only then; the verdict does not change.
func TestCrashFirstTellsTheLoss(t *testing.T) {
	story := func(ops []history.Op, faults []history.Fault) Result {
		t.Helper()
		res := Check(context.Background(), ops, Options{})
		if res.Verdict != Invalid {
			t.Fatalf("the check found %s: %s", res.Verdict, res.Explanation)
		}
		got := CrashFirst(res, ops, faults)
		if got.Verdict != Invalid || got.Keys[0].Verdict != Invalid || len(got.Keys[0].Culprits) != 2 {
			t.Fatalf("verdict changed: %+v", got)
		}
		return got
	}
	twice := []history.Op{grant(1, 7, 0, 1, 0), grant(2, 7, 9, 10, 2)}
	got := story(twice, []history.Fault{powerLoss})
	want := "token 7 was acknowledged at 1.00 s (to process 1), the power-loss on n2 at 5.00 s lost it, and it was granted again at 10.00 s (to process 2): tokens must only increase"
	if got.Keys[0].Explanation != want || got.Explanation != want {
		t.Errorf("got\n%s\nwant\n%s", got.Keys[0].Explanation, want)
	}
	down := []history.Op{grant(1, 9, 0, 1, 0), grant(2, 4, 9, 10, 2)}
	got = story(down, []history.Fault{{F: "kill-leader", Nodes: []string{"n1"}, Start: 3e9, End: 4e9}, powerLoss, {F: "pause", Start: 2e9, End: 3e9}})
	want = "token 9 was acknowledged at 1.00 s (to process 1), the kill-leader on n1 at 3.00 s (or the crash after it) lost it, and the tokens went down to 4 at 10.00 s (granted to process 2): tokens must only increase"
	if got.Keys[0].Explanation != want {
		t.Errorf("got\n%s\nwant\n%s", got.Keys[0].Explanation, want)
	}
	got = story(down, []history.Fault{{F: "failover", Nodes: []string{"n3"}, Start: 3e9, End: 4e9}})
	if !strings.Contains(got.Keys[0].Explanation, "the failover to n3 at 3.00 s lost it") {
		t.Errorf("failover: %s", got.Keys[0].Explanation)
	}
	// No crash between, a crash before the acknowledgement or after the
	// second grant, or only a pause: the check's own sentence.
	plain := Check(context.Background(), twice, Options{}).Explanation
	for _, faults := range [][]history.Fault{nil, {{F: "pause", Start: 5e9, End: 6e9}},
		{{F: "power-loss", Start: 0.5e9, End: 6e9}}, {{F: "power-loss-all", Start: 11e9, End: 12e9}}} {
		if got := story(twice, faults); got.Keys[0].Explanation != plain || !strings.Contains(plain, "token 7 was granted twice") {
			t.Errorf("faults %+v: %s", faults, got.Keys[0].Explanation)
		}
	}
}

// The crashes are faults the nemesis registry has (checked in harness,
// which sees both), and nothing else: a failover is not one.
func TestCrash(t *testing.T) {
	for _, f := range []string{"kill", "kill-leader", "power-loss", "power-loss-leader", "power-loss-all", "power-loss-majority", "failpoint"} {
		if !Crash(f) {
			t.Errorf("%s is no crash", f)
		}
	}
	// A failover of the service's own stops no process: it loses grants
	// (losesGrants) but is never named a crash.
	if !losesGrants(FailoverEvent) {
		t.Error("a failover loses no grant")
	}
	for _, f := range []string{FailoverEvent, "pause", "pause-server", "pause-all", "partition", "clock-jump", ""} {
		if Crash(f) {
			t.Errorf("%s is a crash", f)
		}
	}
}

// A Sentinel failover with no crash: the redis-py run of issue 55, where
// the clients moved to a promoted replica whose counter was hundreds
// behind. The contradicted grants are counted after a failover, never
// after a crash; a crash between names the grant as a crash's.
func TestContradictionsAfterAFailover(t *testing.T) {
	ops := []history.Op{grant(1, 448, 0, 1, 0), grant(2, 35, 5, 6, 2), grant(3, 36, 7, 8, 4)}
	failover := history.Fault{F: FailoverEvent, Nodes: []string{"n3"}, Start: 3e9, End: 4e9}
	x := CountContradictions(ops, []history.Fault{failover})
	wantContradictions(t, x, ContradictionCounts{Contradicted: 2, WentDown: 2, AfterFailover: 2})
	if c := x.List[0]; c.Crash != "" || c.Failover != "failover to n3" || c.FailoverTime != 3e9 || c.Token != 448 || c.LaterToken != 35 {
		t.Errorf("first contradiction %+v", c)
	}
	if got, want := x.Text(), "2 of 3 acknowledged grants were contradicted (2 tokens went down; 2 after a failover)"; got != want {
		t.Errorf("text %q, want %q", got, want)
	}
	x = CountContradictions(ops, []history.Fault{failover, {F: "kill", Nodes: []string{"n1"}, Start: 6.5e9, End: 6.8e9}})
	wantContradictions(t, x, ContradictionCounts{Contradicted: 2, WentDown: 2, AfterCrash: 1, AfterFailover: 1})
}
