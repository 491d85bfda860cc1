package models

import (
	"context"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/history"
)

// keyGrant is an ok acquire of key, times in seconds.
func keyGrant(key string, p int, token uint64, call, ret float64, index int64) history.Op {
	o := grant(p, token, call, ret, index)
	o.Key = key
	return o
}

// A Sentinel failover takes every key's INCR counter back at once (the
// promoted replica was hundreds behind): key k3's counter went 448 → 35
// at 5 s, key k0's 402 → 100 at 8 s. The run is told by the first token
// that went down, 448 → 35, not by the key first in name order.
func TestRunNamesTheFirstTokenThatWentDown(t *testing.T) {
	ops := []history.Op{
		keyGrant("k0", 1, 401, 0.5, 0.6, 0), keyGrant("k0", 2, 402, 1.0, 1.1, 2),
		keyGrant("k3", 3, 447, 0.7, 0.8, 4), keyGrant("k3", 4, 448, 1.5, 1.6, 6),
		keyGrant("k3", 3, 35, 5.0, 5.1, 8), keyGrant("k3", 4, 36, 6.0, 6.1, 10),
		keyGrant("k0", 1, 100, 8.0, 8.1, 12),
	}
	res := Check(context.Background(), ops, Options{})
	if res.Verdict != Invalid {
		t.Fatalf("verdict %s: %s", res.Verdict, res.Explanation)
	}
	want := "process 3 was granted token 35 at 5.10 s, but token 448 had already been granted at 1.60 s (to process 4): tokens must only increase (and 1 more key invalid)"
	if res.Explanation != want {
		t.Errorf("explanation\n%s\nwant\n%s", res.Explanation, want)
	}
	// Told with the crash or failover between, the same pair leads.
	failover := history.Fault{F: "failover", Nodes: []string{"n2"}, Start: 3e9, End: 4e9}
	told := CrashFirst(StaleWriteFirst(res, ops), ops, []history.Fault{failover})
	if !strings.HasPrefix(told.Explanation, "token 448 was acknowledged at 1.60 s (to process 4), the failover to n2 at 3.00 s lost it, and the tokens went down to 35 at 5.10 s") {
		t.Errorf("told: %s", told.Explanation)
	}
}
