package reports

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// A run under a power fault shows its cuts — made, post-cut grants, what
// each dropped — in the summary, results.json, JUnit and report.html; one
// that granted nothing after its cut is unknown, and every output says
// why.
func TestPowerCutsInEveryOutput(t *testing.T) {
	ops := []history.Op{
		{F: history.Acquire, Type: history.OK, Key: "k0", Token: 1, Call: 1e9, Return: 2e9, Done: 2e9},
		{F: history.Acquire, Type: history.OK, Key: "k0", Token: 2, Call: 6e9, Return: 7e9, Done: 7e9},
	}
	faults := []history.Fault{{F: "power-loss", Nodes: []string{"n1"}, Start: 5e9, End: 5.5e9}}
	drops := []models.Drop{{Fault: "power-loss", Nodes: []string{"n1"}, Files: 1, Bytes: 4096}}
	for _, tc := range []struct {
		name string
		ops  []history.Op
		want models.Verdict
		says string
	}{
		{"granted after", ops, models.Valid, "1 power cut, 1 post-cut grant; dropped 1 file, 4 KiB in all"},
		{"nothing after", ops[:1], models.Unknown, "the service granted nothing after the cut at 5.00 s (power-loss on n1)"},
	} {
		p := models.CountPowerCuts(tc.ops, faults, []string{"power-loss"}, drops)
		res := models.Result{Verdict: models.Valid, Keys: []models.KeyResult{{Key: "k0", Verdict: models.Valid}}}.WithPowerCuts(p)
		if res.Verdict != tc.want {
			t.Fatalf("%s: %s, want %s", tc.name, res.Verdict, tc.want)
		}
		r := &Run{Dir: t.TempDir(), Name: "redis-power", Started: time.Unix(0, 0), Ops: tc.ops, Faults: faults, Result: res}
		var sum, junit, html bytes.Buffer
		Summary(&sum, r)
		if err := WriteJUnit(&junit, r); err != nil {
			t.Fatal(err)
		}
		if err := WriteHTML(&html, r); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(MakeResults(r))
		outs := map[string]string{"summary": sum.String(), "junit": junit.String(), "html": html.String()}
		if tc.want != models.Valid {
			outs["results.json"] = string(b) // its explanation; a valid one's counts are numbers
		}
		for what, out := range outs {
			if !strings.Contains(out, tc.says) && !strings.Contains(out, strings.ReplaceAll(tc.says, "(", "&#40;")) {
				t.Errorf("%s: the %s does not say %q", tc.name, what, tc.says)
			}
		}
		if !strings.Contains(junit.String(), `name="power_cuts.post_cut_grants"`) || !strings.Contains(string(b), `"post_cut_grants"`) ||
			!strings.Contains(html.String(), `id="power-cuts"`) || !strings.Contains(sum.String(), "power cuts: ") {
			t.Errorf("%s: a power cut output is missing", tc.name)
		}
	}
}
