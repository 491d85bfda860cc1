package fenced

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A user's client that sends the storage a body of the wrong shape is
// told which field is wrong in JSON's words, not Go's.
func TestBadRequestBodyIsNamedPlainly(t *testing.T) {
	srv := httptest.NewServer(Handler(NewStore(All)))
	defer srv.Close()
	for body, want := range map[string]string{
		`{"key": "k0", "token": "7"}`: `the request body: field \"token\" must be a number, got a string`,
		`{"key": 0}`:                  `the request body: field \"key\" must be a string, got a number`,
		`{"key"`:                      `the request body: not complete JSON`,
	} {
		resp, err := http.Post(srv.URL+"/read", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusConflict || !strings.Contains(string(b), want) || strings.Contains(string(b), "Go ") {
			t.Errorf("%s: %d %s, want %q", body, resp.StatusCode, b, want)
		}
	}
}
