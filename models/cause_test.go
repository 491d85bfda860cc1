package models

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/history"
)

// A paused holder's write accepted late in its long interval is what made
// a later read impossible: the explanation names that write first, and
// keeps the check's own sentence after it.
func TestStaleWriteFirstNamesTheCause(t *testing.T) {
	v := func(x int64) *int64 { return &x }
	ops := []history.Op{
		{Process: 1, Key: "k0", F: history.Write, Type: history.OK, Token: 1, Prev: v(0), Value: v(1), Call: 1e9, Return: 9e9, InvokeIndex: 1},
		{Process: 2, Key: "k0", F: history.Read, Type: history.OK, Token: 2, Value: v(0), Call: 2e9, Return: 3e9, InvokeIndex: 2},
		{Process: 2, Key: "k0", F: history.Read, Type: history.OK, Token: 2, Value: v(7), Call: 10e9, Return: 11e9, InvokeIndex: 3},
	}
	res := Result{Verdict: Invalid, Explanation: "process 2 read 7 (and 1 more keys invalid)",
		Keys: []KeyResult{{Key: "k0", Verdict: Invalid, Explanation: "process 2 read 7", Culprits: []int64{3}}}}
	got := StaleWriteFirst(res, ops)
	want := "process 1 wrote 1 with token 1 at 9.00 s after token 2 was admitted at 3.00 s (process 2's read at 3.00 s): a stale lease holder's write was accepted; then process 2 read 7"
	if got.Keys[0].Explanation != want {
		t.Errorf("key explanation\n%s\nwant\n%s", got.Keys[0].Explanation, want)
	}
	if !strings.HasPrefix(got.Explanation, want) || !strings.HasSuffix(got.Explanation, "(and 1 more keys invalid)") {
		t.Errorf("run explanation %q", got.Explanation)
	}
	if c := got.Keys[0].Culprits; len(c) != 3 || c[0] != 1 || c[2] != 3 {
		t.Errorf("culprits %v", c)
	}
	// A write that returned after the op the check could not place is not
	// its cause; a valid result is left alone.
	late := append([]history.Op(nil), ops...)
	late[0].Return = 12e9
	if got := StaleWriteFirst(res, late); got.Keys[0].Explanation != "process 2 read 7" {
		t.Errorf("a later write was named: %s", got.Keys[0].Explanation)
	}
	// But a stale write still in flight when the culprit read its very
	// value did cause it: applied just before the read, answered just after
	// (the CI run of TestMemoryRunExitCodes found the explanation naming
	// only the read).
	inFlight := append([]history.Op(nil), ops...)
	inFlight[0].Value, inFlight[0].Return = v(7), 11.001e9
	got = StaleWriteFirst(res, inFlight)
	if !strings.HasPrefix(got.Keys[0].Explanation, "process 1 wrote 7 with token 1 at 11.00 s after token 2 was admitted") {
		t.Errorf("the in-flight stale write the read saw was not named: %s", got.Keys[0].Explanation)
	}
	if got := StaleWriteFirst(Result{Verdict: Valid}, ops); got.Explanation != "" {
		t.Errorf("a valid result changed: %+v", got)
	}
}
