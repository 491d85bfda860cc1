package reports

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/models/verdict"
)

// powerLossRun is a lock service that lost its counter in a power cut:
// token 5 acknowledged at 2 s, n1's power cut at 5 s, token 5 granted
// again at 9 s.
func powerLossRun(t *testing.T) *Run {
	t.Helper()
	sec := int64(1e9) // seconds
	events := []history.Event{
		{Time: 1 * sec, Process: 0, Type: history.Invoke, F: history.Acquire, Key: "k0"},
		{Time: 2 * sec, Process: 0, Type: history.OK, F: history.Acquire, Key: "k0", Token: 5},
		{Time: 3 * sec, Process: 0, Type: history.Invoke, F: history.Write, Key: "k0", Token: 5, Prev: history.Int64(0), Value: history.Int64(1)},
		{Time: 4 * sec, Process: 0, Type: history.OK, F: history.Write, Key: "k0", Token: 5, Prev: history.Int64(0), Value: history.Int64(1)},
		{Time: 5 * sec, Process: history.NemesisProcess, Type: history.Invoke, F: "power-loss", Nodes: []string{"n1"}},
		{Time: 6 * sec, Process: history.NemesisProcess, Type: history.Info, F: "power-loss", Nodes: []string{"n1"}},
		{Time: 8 * sec, Process: 1, Type: history.Invoke, F: history.Acquire, Key: "k0"},
		{Time: 9 * sec, Process: 1, Type: history.OK, F: history.Acquire, Key: "k0", Token: 5},
		{Time: 10 * sec, Process: 1, Type: history.Invoke, F: history.Read, Key: "k0", Token: 5},
		{Time: 11 * sec, Process: 1, Type: history.OK, F: history.Read, Key: "k0", Token: 5, Value: history.Int64(1)},
	}
	for i := range events {
		events[i].Index = int64(i)
	}
	r := &Run{Name: "redis-setnx-incr-fenced-all-power-loss", Events: events}
	r.Ops, r.Faults = history.Pair(events)
	r.Result = verdict.Settle(verdict.Run{Check: models.Check(context.Background(), r.Ops, models.Options{}), Ops: r.Ops,
		Facts: models.RunFacts{Faults: r.Faults}})
	return r
}

// The verdict tells the loss, and results.json, the summary, JUnit and
// report.html carry the counts beside the exposures.
func TestContradictedGrantsReported(t *testing.T) {
	r := powerLossRun(t)
	want := "token 5 was acknowledged at 2.00 s (to process 0), the power-loss on n1 at 5.00 s lost it, and it was granted again at 9.00 s (to process 1): tokens must only increase"
	if r.Result.Verdict != models.Invalid || r.Result.Explanation != want {
		t.Fatalf("%s: %s\nwant %s", r.Result.Verdict, r.Result.Explanation, want)
	}
	var buf bytes.Buffer
	if err := WriteResults(&buf, r); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Contradicted *models.Contradictions `json:"contradicted_grants"`
	}
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil || got.Contradicted == nil {
		t.Fatalf("results.json: %v\n%s", err, buf.String())
	}
	x := got.Contradicted
	if x.ContradictionCounts != (models.ContradictionCounts{Grants: 2, Contradicted: 1, GrantedTwice: 1, AfterCrash: 1}) ||
		len(x.Keys) != 1 || len(x.List) != 1 || x.List[0].Crash != "power-loss on n1" {
		t.Errorf("results.json's contradicted_grants: %+v", x)
	}
	buf.Reset()
	Summary(&buf, r)
	if !strings.Contains(buf.String(), "grants: 1 of 2 acknowledged grants was contradicted (1 token granted twice; 1 after a crash)") {
		t.Errorf("summary:\n%s", buf.String())
	}
	buf.Reset()
	if err := WriteJUnit(&buf, r); err != nil || !strings.Contains(buf.String(), `name="contradicted_grants.after_crash" value="1"`) {
		t.Errorf("JUnit: %v\n%s", err, buf.String())
	}
	if s := StepSummary(r); !strings.Contains(s, "Contradicted grants: 1 of 2 acknowledged grants was contradicted") {
		t.Errorf("step summary:\n%s", s)
	}
	buf.Reset()
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	html := buf.String()
	for _, s := range []string{`id="contradicted-grants"`, "1 of 2 acknowledged grants was contradicted", "power-loss on n1 at 5.00 s", "token 5 to process 1 at 9.00 s", "the power-loss on n1 at 5.00 s lost it"} {
		if !strings.Contains(html, s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
}
