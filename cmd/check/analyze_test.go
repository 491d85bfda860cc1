package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeHistory(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A history with a wrong JSON type names the line, the field and the
// type; a bad file is no bad flag, so no --help hint.
func TestAnalyzeWrongTypesNameTheField(t *testing.T) {
	lines := strings.SplitAfter(staleWrite, "\n")
	body := strings.Join(lines[:2], "") + strings.Replace(lines[2], `"token":1`, `"token":"1"`, 1) + strings.Join(lines[3:], "")
	path := writeHistory(t, body)
	code, _, stderr := runCLI(t, "analyze", path)
	want := `line 3: field "token" must be a number, got a string`
	if code != 254 || !strings.Contains(stderr, path+": "+want) {
		t.Errorf("exit %d, stderr %q; want 254 and %q", code, stderr, want)
	}
	if strings.Contains(stderr, "Go struct") || strings.Contains(stderr, "--help") {
		t.Errorf("Go's own words or a --help hint for a bad file: %q", stderr)
	}
	// The same for check report, and for a missing file.
	dir := filepath.Dir(path)
	code, _, stderr = runCLI(t, "report", dir)
	if code != 254 || !strings.Contains(stderr, want) || strings.Contains(stderr, "--help") {
		t.Errorf("report: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "analyze", filepath.Join(dir, "missing.jsonl"))
	if code != 254 || !strings.Contains(stderr, "missing.jsonl") || strings.Contains(stderr, "--help") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
}

func TestAnalyzeOfAnEmptyFileSaysSo(t *testing.T) {
	for _, body := range []string{"", "\n\n"} {
		path := writeHistory(t, body)
		code, out, stderr := runCLI(t, "analyze", path)
		if code != 2 || !strings.Contains(out+stderr, path+" is empty") {
			t.Errorf("%q: exit %d, %s%s; want 2 and that the file is empty", body, code, out, stderr)
		}
		if strings.Contains(out+stderr, "nothing to check") {
			t.Errorf("%q: still says nothing to check: %s%s", body, out, stderr)
		}
		code, out, stderr = runCLI(t, "report", filepath.Dir(path))
		if code != 2 || !strings.Contains(out+stderr, "is empty") {
			t.Errorf("report of %q: exit %d, %s%s", body, code, out, stderr)
		}
	}
}

// A history whose last line was cut by a kill is checked on its complete
// lines, and both analyze and report say the last line was dropped.
func TestAnalyzeAndReportCheckACutHistory(t *testing.T) {
	// The stale write completes on line 12; cut a 13th line short.
	body := staleWrite + `{"index":12,"time":11000000,"process":1,"type":"inv`
	path := writeHistory(t, body)
	note := "the last line (line 13) was incomplete and was dropped: the run was probably killed while writing it"
	code, out, stderr := runCLI(t, "analyze", path)
	if code != 1 || !strings.Contains(out, "INVALID") || !strings.Contains(out+stderr, note) {
		t.Errorf("analyze: exit %d, want 1 with the note\n%s%s", code, out, stderr)
	}
	code, out, stderr = runCLI(t, "report", filepath.Dir(path))
	if code != 1 || !strings.Contains(out+stderr, note) {
		t.Errorf("report: exit %d, want 1 with the note\n%s%s", code, out, stderr)
	}
	html, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "report.html"))
	if !strings.Contains(string(html), "was incomplete and was dropped") {
		t.Error("report.html does not say the last line was dropped")
	}
	// A broken line in the middle is still refused, naming it.
	lines := strings.SplitAfter(staleWrite, "\n")
	path = writeHistory(t, strings.Join(lines[:4], "")+lines[4][:25]+"\n"+strings.Join(lines[5:], ""))
	if code, _, stderr := runCLI(t, "analyze", path); code != 254 || !strings.Contains(stderr, "line 5") {
		t.Errorf("a broken middle line: exit %d, %q", code, stderr)
	}
}
