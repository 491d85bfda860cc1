package reports

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A link in the store that leads outside it is refused as such (403),
// not answered as a server error.
func TestStoreServerRefusesLinksOutOfTheStore(t *testing.T) {
	store, _ := testStore(t)
	s, err := NewStoreServer(store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	for _, p := range []string{
		"/memory-lease-none-pause/20260102T030405.000Z/escape.txt",
		"/up/secret.txt", "/up/", "/up",
	} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: %d %q, want 403", p, resp.StatusCode, b)
		}
		if strings.Contains(string(b), "TOP SECRET") || strings.Contains(string(b), store) {
			t.Errorf("%s: the answer shows what is outside the store: %q", p, b)
		}
	}
	// Links inside the store still work, and a missing file is a 404.
	if resp, err := http.Get(srv.URL + "/latest/report.html"); err != nil || resp.StatusCode != 200 {
		t.Errorf("latest/report.html: %v %v", resp, err)
	}
	if resp, err := http.Get(srv.URL + "/latest/nothing-here.txt"); err != nil || resp.StatusCode != 404 {
		t.Errorf("a missing file: %v %v", resp, err)
	}
}
