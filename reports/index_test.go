package reports

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/models"
)

// The index trusts a results.json that says valid only when the run's
// history ends with the end event: a run killed and then reported by a
// fencecheck that did not know better is listed as unknown, with why.
func TestIndexListsAValidRunWithoutItsEndAsUnknown(t *testing.T) {
	store := t.TempDir()
	const ops = `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"k0"}` + "\n" +
		`{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":"k0","token":1}` + "\n"
	for stamp, c := range map[string]struct{ verdict, history string }{
		"20260101T000001.000Z": {"valid", ops + `{"index":2,"time":3,"type":"end"}` + "\n"},
		"20260101T000002.000Z": {"valid", ops},
		"20260101T000003.000Z": {"valid", ops + `{"index":2,"time":3,"ty`},
		"20260101T000004.000Z": {"valid", ""},
		"20260101T000005.000Z": {"invalid", ops},
	} {
		dir := filepath.Join(store, "t", stamp)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "results.json"), []byte(`{"schema":"fencecheck/results/v1","verdict":"`+c.verdict+`"}`), 0o644)
		if c.history != "" {
			os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(c.history), 0o644)
		}
	}
	runs, err := ListRuns(os.DirFS(store))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		v   models.Verdict
		why string
	}{
		"20260101T000001.000Z": {models.Valid, ""},
		"20260101T000002.000Z": {models.Unknown, "does not end with the end event"},
		"20260101T000003.000Z": {models.Unknown, "does not end with the end event"},
		"20260101T000004.000Z": {models.Unknown, "no history.jsonl"},
		"20260101T000005.000Z": {models.Invalid, ""},
	}
	if len(runs) != len(want) {
		t.Fatalf("%d runs listed, want %d", len(runs), len(want))
	}
	for _, r := range runs {
		w := want[r.Stamp]
		if r.Verdict != w.v || !strings.Contains(r.Explanation, w.why) {
			t.Errorf("%s: %s %q, want %s saying %q", r.Stamp, r.Verdict, r.Explanation, w.v, w.why)
		}
	}
}
