package fenced_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/lockclient"
)

// A lock-free read (--read-mix) presents no token: with every op checked
// (--fencing all) it is still answered, and the fence stays where the
// holders put it — in the store, across HTTP, through a Guard whose client
// holds no lease, and through the client protocol's FencedStorage.
func TestLockFreeReadIsNeverRefusedAndMovesNoFence(t *testing.T) {
	ctx := context.Background()
	store := fenced.NewStore(fenced.All)
	srv := httptest.NewServer(fenced.Handler(store))
	defer srv.Close()
	var leases backends.Leases[*backends.Grant]
	readers := map[string]func(key string) (int64, error){
		"store": func(key string) (int64, error) { return store.ReadLockFree(ctx, key) },
		"remote": func(key string) (int64, error) {
			return (&fenced.Remote{URL: srv.URL, Client: srv.Client()}).ReadLockFree(ctx, key)
		},
		"guard": func(key string) (int64, error) {
			return fenced.Guard{Storage: store, Check: leases.Check}.ReadLockFree(ctx, key)
		},
		"protocol": func(key string) (int64, error) {
			return (&lockclient.FencedStorage{URL: srv.URL}).ReadLockFree(ctx, key)
		},
	}
	if err := store.Write(ctx, "k", 7, 3); err != nil {
		t.Fatal(err)
	}
	for name, read := range readers {
		v, err := read("k")
		if err != nil || v != 3 {
			t.Fatalf("%s: lock-free read below the fence: %d, %v; want 3", name, v, err)
		}
		// The fence is still 7: a token below it is refused, 7 admitted.
		if _, err := store.Read(ctx, "k", 6); !errors.Is(err, lockclient.ErrFenced) {
			t.Fatalf("%s: after a lock-free read, token 6 was not refused (%v): the read lowered the fence", name, err)
		}
		if _, err := store.Read(ctx, "k", 7); err != nil {
			t.Fatalf("%s: after a lock-free read, token 7 was refused (%v): the read raised the fence", name, err)
		}
	}
	// A key no one wrote reads 0 and leaves its fence at 0.
	if v, err := store.ReadLockFree(ctx, "fresh"); err != nil || v != 0 {
		t.Fatalf("fresh key: %d, %v", v, err)
	}
	if err := store.Write(ctx, "fresh", 1, 1); err != nil {
		t.Fatalf("token 1 after a lock-free read of a fresh key: %v", err)
	}
}
