package harness

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/internal/usage"
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

// With --store every line exchanged is kept whole, with the check it
// belongs to and its outcome, and with its secrets elided.
func TestClientTestKeepsTheExchange(t *testing.T) {
	t.Parallel()
	var exchange, out strings.Builder
	ct := &clientTest{out: &out, exchange: &exchange}
	long := strings.Repeat("v", 400)
	ct.check("acquire: ok", func() string {
		ct.record("c1", 0, true, []byte(`{"type":"init","service":{"password":"s3cr3t"},"note":"`+long+`"}`+"\n"))
		ct.record("c1", 0, false, []byte(`{"type":"ok","token":42}`+"\n"))
		return ""
	})
	ct.check("release: ok", func() string { return "want ok, got fail" })
	got := exchange.String()
	for _, want := range []string{"check: acquire: ok\n", `"token":42}`, long, "passed\n", "check: release: ok\n", "FAILED: want ok, got fail\n", `"password":"…"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the exchange log lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "s3cr3t") {
		t.Errorf("the exchange log holds a secret:\n%s", got)
	}
}

func TestCheckKeepDir(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := checkKeepDir(filepath.Join(dir, "new")); err != nil {
		t.Errorf("a directory that does not exist yet: %v", err)
	}
	if err := checkKeepDir(dir); err != nil {
		t.Errorf("an empty directory: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var ue *usage.Error
	if err := checkKeepDir(dir); !errors.As(err, &ue) || ue.Flag != "store" {
		t.Errorf("a directory with a file in it: %v, want a usage error on --store", err)
	}
	if err := checkKeepDir(filepath.Join(dir, "x")); !errors.As(err, &ue) || !strings.Contains(err.Error(), "is a file") {
		t.Errorf("a file: %v", err)
	}
}
