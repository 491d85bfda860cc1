package harness

import (
	"strings"
	"testing"
)

// What client-test prints of an init line carries neither a database's
// password nor the API server's bearer token, even when the line is
// longer than what is printed of it.
func TestClientTestElidesSecrets(t *testing.T) {
	t.Parallel()
	token, password := strings.Repeat("t0k3n", 80), "s3cr3t-pw"
	line := `{"type":"init","service":{"backend":"kubernetes","password":"` + password + `","bearer_token":"` + token + `","ca":"-----BEGIN CERTIFICATE-----"}}` + "\n"
	ct := &clientTest{}
	ct.record("c1", 0, true, []byte(line))
	if len(ct.lines) != 1 {
		t.Fatalf("recorded %d lines, want 1", len(ct.lines))
	}
	got := ct.lines[0]
	if strings.Contains(got, "t0k3n") || strings.Contains(got, password) {
		t.Errorf("a secret is printed: %s", got)
	}
	if !strings.Contains(got, `"bearer_token":"…"`) || !strings.Contains(got, `"password":"…"`) {
		t.Errorf("the elided fields are not named: %s", got)
	}
}
