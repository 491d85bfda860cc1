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

// A tokenless lock (Redis SETNX, Redlock): every token is 0, so no token
// order tells the paused holder's write; the read that saw its value is
// explained by the update it lost (CI's redlock run named only the read).
func TestLostUpdateNamesTheTokenlessStaleWrite(t *testing.T) {
	v := func(x int64) *int64 { return &x }
	ops := []history.Op{
		{Process: 1, Key: "k0", F: history.Write, Type: history.OK, Prev: v(3), Value: v(4), Call: 1e9, Return: 9e9, InvokeIndex: 1},
		{Process: 2, Key: "k0", F: history.Write, Type: history.OK, Prev: v(3), Value: v(4), Call: 2e9, Return: 3e9, InvokeIndex: 2},
		{Process: 2, Key: "k0", F: history.Write, Type: history.OK, Prev: v(4), Value: v(5), Call: 4e9, Return: 5e9, InvokeIndex: 3},
		{Process: 3, Key: "k0", F: history.Read, Type: history.OK, Value: v(4), Call: 10e9, Return: 11e9, InvokeIndex: 4},
	}
	res := Result{Verdict: Invalid, Explanation: "process 3 read 4",
		Keys: []KeyResult{{Key: "k0", Verdict: Invalid, Explanation: "process 3 read 4", Culprits: []int64{4}}}}
	got := StaleWriteFirst(res, ops)
	want := "process 1 wrote 4 over 3 at 9.00 s, after process 2's write of 5 was acknowledged at 5.00 s: an update was lost; then process 3 read 4"
	if got.Keys[0].Explanation != want || got.Explanation != want {
		t.Errorf("explanation\n%s\nwant\n%s", got.Keys[0].Explanation, want)
	}
	// A read of the last value acknowledged is no lost update.
	ops[3].Value = v(5)
	if got := StaleWriteFirst(res, ops); got.Keys[0].Explanation != "process 3 read 4" {
		t.Errorf("named a lost update that was not: %s", got.Keys[0].Explanation)
	}
}

// A write computed from a value written after x, still in flight when the
// read began, is no lost update: nothing is named.
func TestLostUpdateNotNamedWhenItsValueMayBeLater(t *testing.T) {
	v := func(x int64) *int64 { return &x }
	ops := []history.Op{
		{Process: 2, Key: "k0", F: history.Write, Type: history.OK, Prev: v(4), Value: v(5), Call: 4e9, Return: 5e9, InvokeIndex: 1},
		{Process: 4, Key: "k0", F: history.Write, Type: history.OK, Prev: v(5), Value: v(6), Call: 6e9, Return: 12e9, InvokeIndex: 2},
		{Process: 1, Key: "k0", F: history.Write, Type: history.OK, Prev: v(6), Value: v(7), Call: 7e9, Return: 9.5e9, InvokeIndex: 3},
		{Process: 3, Key: "k0", F: history.Read, Type: history.OK, Value: v(7), Call: 10e9, Return: 11e9, InvokeIndex: 4},
	}
	res := Result{Verdict: Invalid, Explanation: "process 3 read 7",
		Keys: []KeyResult{{Key: "k0", Verdict: Invalid, Explanation: "process 3 read 7", Culprits: []int64{4}}}}
	if got := StaleWriteFirst(res, ops); got.Keys[0].Explanation != "process 3 read 7" {
		t.Errorf("named a lost update that was not: %s", got.Keys[0].Explanation)
	}
}

// A client that fences with its own SQL and ignores the row count reports
// ok for an UPDATE that changed nothing: an ok write with a lower token,
// which the model cannot tell from an accepted stale write. When the next
// read, with no write between, found the value from before it, the write
// is named as acknowledged but never taking effect.
func TestNeverTookEffect(t *testing.T) {
	v := func(x int64) *int64 { return &x }
	ops := []history.Op{
		{Process: 2, Key: "k0", F: history.Write, Type: history.OK, Token: 9, Prev: v(3), Value: v(4), Call: 2e9, Return: 3e9, InvokeIndex: 1},
		{Process: 1, Key: "k0", F: history.Write, Type: history.OK, Token: 5, Prev: v(3), Value: v(7), Call: 8e9, Return: 9e9, InvokeIndex: 2},
		{Process: 3, Key: "k0", F: history.Read, Type: history.OK, Token: 11, Value: v(4), Call: 10e9, Return: 11e9, InvokeIndex: 3},
	}
	stale := "process 1 wrote 7 with token 5 at 9.00 s after token 9 was admitted at 3.00 s (process 2's write at 3.00 s): a stale lease holder's write was accepted"
	res := Result{Verdict: Invalid, Explanation: stale, Keys: []KeyResult{{Key: "k0", Verdict: Invalid, Explanation: stale, Culprits: []int64{2, 1}}}}
	got := StaleWriteFirst(res, ops)
	want := "process 1 wrote 7 with token 5 at 9.00 s after token 9 was admitted at 3.00 s (process 2's write at 3.00 s): the write was acknowledged but never took effect (process 3's read at 11.00 s, the next with no write between, found 4, not 7), so the client reported ok for a write its storage never made"
	if got.Keys[0].Explanation != want || got.Explanation != want {
		t.Errorf("explanation\n%s\nwant\n%s", got.Keys[0].Explanation, want)
	}
	// A read that saw the write's value: it took effect.
	ops[2].Value = v(7)
	if got := StaleWriteFirst(res, ops); got.Keys[0].Explanation != stale {
		t.Errorf("a write that took effect was retold: %s", got.Keys[0].Explanation)
	}
	// A write in between may have overwritten it: no claim.
	ops[2].Value = v(4)
	between := append(ops[:2:2], history.Op{Process: 4, Key: "k0", F: history.Write, Type: history.Info, Token: 12, Value: v(4), Call: 9.5e9, Return: 20e9, InvokeIndex: 4}, ops[2])
	if got := StaleWriteFirst(res, between); got.Keys[0].Explanation != stale {
		t.Errorf("retold despite a write between: %s", got.Keys[0].Explanation)
	}
}
