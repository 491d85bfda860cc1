package fenced_test

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"testing"

	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/lockclient"
)

// lockclient.FencedStorage, the storage API as a Go client speaks it,
// against the storage node's own handler (what `check
// storage` serves): values round-trip, a stale token is ErrFenced and
// definite, a storage nobody listens on is a definite failure.
func TestFencedStorageSpeaksTheStorageAPI(t *testing.T) {
	srv := httptest.NewServer(fenced.Handler(fenced.NewStore(fenced.Mode("all"))))
	defer srv.Close()
	s := &lockclient.FencedStorage{URL: srv.URL}
	ctx := context.Background()
	if err := s.Write(ctx, "k0", 2, 7); err != nil {
		t.Fatal(err)
	}
	if v, err := s.Read(ctx, "k0", 2); err != nil || v != 7 {
		t.Fatalf("read %d, %v; want 7", v, err)
	}
	err := s.Write(ctx, "k0", 1, 8)
	if !errors.Is(err, lockclient.ErrFenced) {
		t.Fatalf("write with a stale token: %v, want ErrFenced", err)
	}
	if typ, text := lockclient.Outcome(err); typ != lockclient.TypeFail || text != lockclient.ErrorFenced {
		t.Errorf("stale write answered %s %q", typ, text)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, err = (&lockclient.FencedStorage{URL: "http://" + addr}).Read(ctx, "k0", 1)
	if typ, _ := lockclient.Outcome(err); err == nil || typ != lockclient.TypeFail {
		t.Errorf("a storage nobody listens on: %v (%s), want a definite failure", err, typ)
	}
}
