package harness

import (
	"testing"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/history"
)

// etcd's grants on an expired lease are counted both ways the built-in
// client meets them: acted on (token 0) and refused at the read-back.
func TestExpiredGrantsCounted(t *testing.T) {
	events := []history.Event{
		{Process: 0, Type: history.Invoke, F: history.Acquire, Key: "k0"},
		{Process: 0, Type: history.OK, F: history.Acquire, Key: "k0", Token: 7},
		{Process: 1, Type: history.OK, F: history.Acquire, Key: "k0", Token: 0},
		{Process: 2, Type: history.Fail, F: history.Acquire, Key: "k0", Error: "the lock key vanished: session expired"},
		{Process: 3, Type: history.Fail, F: history.Acquire, Key: "k0", Error: "lock not granted: mutex: session is expired"},
		{Process: 4, Type: history.Fail, F: history.Acquire, Key: "k0", Error: "lock not granted: context deadline exceeded"},
		{Process: 0, Type: history.OK, F: history.Write, Key: "k0", Token: 0},
	}
	g := expiredGrants(defaulted(Config{Backend: "etcd", Recipe: "mutex"}), events)
	if !g.Counted || g.Count != 3 || g.Grants != 4 {
		t.Fatalf("etcd mutex: %+v, want 3 of 4 grants counted", g)
	}
	// From the Lock RPC, "session is expired" is the server refusing the
	// lock (etcd 3.5 and later), not a grant.
	rpc := append(events[:4:4], history.Event{Process: 5, Type: history.Fail, F: history.Acquire, Key: "k0",
		Error: "lock not granted: rpc error: code = Unknown desc = mutex: session is expired"})
	g = expiredGrants(defaulted(Config{Backend: "etcd", Recipe: "lock-rpc"}), rpc)
	if !g.Counted || g.Count != 2 || g.Grants != 3 {
		t.Fatalf("etcd lock-rpc: %+v, want 2 of 3 grants counted", g)
	}
}

// Every backend either counts them or says why not.
func TestEveryBackendSaysWhetherItCountsExpiredGrants(t *testing.T) {
	for _, b := range registry.All() {
		g := expiredGrants(defaulted(Config{Backend: b.Name}), nil)
		if g.Counted == (g.Why != "") {
			t.Errorf("%s: counted %v, why %q: one or the other", b.Name, g.Counted, g.Why)
		}
	}
}
