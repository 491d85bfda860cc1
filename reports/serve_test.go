package reports

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// store makes a store with two runs (one without results.json), a
// latest link, a secret beside the store and links that try to reach it.
func testStore(t *testing.T) (store, secret string) {
	t.Helper()
	base := t.TempDir()
	store = filepath.Join(base, "store")
	secret = filepath.Join(base, "secret.txt")
	if err := os.WriteFile(secret, []byte("TOP SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := hostileRun()
	r.Name = "<script>alert(1)</script>"
	old := filepath.Join(store, "memory-lease-none-pause", "20260102T030405.000Z")
	r.Dir = old
	if err := os.MkdirAll(old, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteAll(r); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(old, "history.jsonl"), []byte("{}\n"), 0o644)
	newer := filepath.Join(store, "<img src=x onerror=alert(1)> \"test\"", "20260103T030405.000Z")
	if err := os.MkdirAll(newer, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(newer, "history.jsonl"), []byte("{}\n"), 0o644)
	os.Symlink(filepath.Join("memory-lease-none-pause", "20260102T030405.000Z"), filepath.Join(store, "latest"))
	os.Symlink(secret, filepath.Join(old, "escape.txt"))
	os.Symlink(base, filepath.Join(store, "up"))
	return store, secret
}

func TestStoreServerIndexAndFiles(t *testing.T) {
	store, _ := testStore(t)
	s, err := NewStoreServer(store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	get := func(p string) (int, string, http.Header) {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), resp.Header
	}
	code, body, hdr := get("/")
	if code != 200 || !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("index: %d %v", code, hdr)
	}
	if strings.Contains(body, "<script>") || strings.Contains(body, "<img") {
		t.Error("the index lets markup from the store through")
	}
	first, second := strings.Index(body, "&lt;img src=x onerror=alert(1)&gt; &#34;test&#34;"), strings.Index(body, "memory-lease-none-pause")
	if first < 0 || second < 0 || first > second {
		t.Errorf("want both runs, newest first (%d, %d)", first, second)
	}
	if !strings.Contains(body, `class="verdict invalid"`) || !strings.Contains(body, "no results") {
		t.Error("the index does not show the verdicts")
	}
	if !strings.Contains(body, `href="/%3Cimg%20src=x%20onerror=alert%281%29%3E%20%22test%22/20260103T030405.000Z/history.jsonl"`) {
		t.Error("links to oddly named runs are not escaped")
	}
	if code, body, _ := get("/memory-lease-none-pause/20260102T030405.000Z/report.html"); code != 200 || !strings.Contains(body, `id="verdict"`) {
		t.Errorf("report: %d", code)
	}
	if code, _, hdr := get("/latest/history.jsonl"); code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain") {
		t.Errorf("latest/history.jsonl: %d %s", code, hdr.Get("Content-Type"))
	}
	resp, err := http.Post(srv.URL+"/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	}
}

// Nothing outside the store is served, however the path is spelt or
// whatever links the store holds.
func TestStoreServerRefusesPathTraversal(t *testing.T) {
	store, _ := testStore(t)
	s, err := NewStoreServer(store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	srv := httptest.NewServer(s)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	raw := func(target, host string) (int, string) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, "GET "+target+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%s: %v", target, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, target := range []string{
		"/../secret.txt", "/..%2fsecret.txt", "/%2e%2e/secret.txt", "/%2E%2E%2Fsecret.txt",
		"/memory-lease-none-pause/../../secret.txt", "/memory-lease-none-pause/..%2f..%2fsecret.txt",
		"/memory-lease-none-pause/20260102T030405.000Z/escape.txt", "/up/secret.txt", "/up/",
		"/..\\secret.txt", "/%00/secret.txt", "//../secret.txt", "/./../secret.txt",
	} {
		code, body := raw(target, addr)
		if code == 200 || strings.Contains(body, "TOP SECRET") {
			t.Errorf("%s: %d, served something from outside the store: %.80q", target, code, body)
		}
	}
	if code, _ := raw("/", "evil.example:80"); code != http.StatusForbidden {
		t.Errorf("a request for another host name: %d, want 403", code)
	}
	if code, _ := raw("/", "localhost"); code != 200 {
		t.Errorf("localhost: %d", code)
	}
}

func TestIsLoopbackHost(t *testing.T) {
	for h, want := range map[string]bool{
		"127.0.0.1:8080": true, "localhost": true, "[::1]:80": true, "::1": true, "LOCALHOST:1": true, "127.1.2.3": true,
		"0.0.0.0:8080": false, "example.com": false, "10.0.0.1:80": false, "localhost.evil.com": false, "": false,
	} {
		if got := IsLoopbackHost(h); got != want {
			t.Errorf("%q: %v, want %v", h, got, want)
		}
	}
}
