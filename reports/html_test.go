package reports

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// A 100,000-op history gives a report that opens: under 20 MB, drawn in
// aggregate, with the story still a page long.
func TestReportOfALargeHistoryStaysSmall(t *testing.T) {
	r := synthetic(t, 100_000, false)
	if len(r.Ops) < 100_000 {
		t.Fatalf("synthetic history has %d ops", len(r.Ops))
	}
	start := time.Now()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	size := buf.Len()
	t.Logf("%d ops, %d events: report.html %.1f MB in %s", len(r.Ops), len(r.Events), float64(size)/1e6, took.Round(time.Millisecond))
	if size > 20<<20 {
		t.Errorf("report.html is %.1f MB, want under 20 MB", float64(size)/(1<<20))
	}
	out := buf.String()
	for _, id := range []string{`id="verdict"`, `id="story-k0"`, `id="timeline"`, `id="timeline-anomaly"`, `id="latency"`, `id="throughput"`, `id="counts"`} {
		if !strings.Contains(out, id) {
			t.Errorf("the report has no %s", id)
		}
	}
	if n := strings.Count(out, `<li class=`); n == 0 || n > 60 {
		t.Errorf("the story has %d steps, want a readable handful", n)
	}
	if !strings.Contains(out, "too many ops to draw one by one") && !strings.Contains(out, "Too many ops to draw one by one") {
		t.Error("the overview does not say it is aggregated")
	}
}

const hostile = "<script>alert(1)</script>\"'&\xff\xfe\x00\x1b[31m"

// hostileRun puts hostile strings everywhere a client, a server or a
// person can put a string: keys, errors, nemesis nodes and errors,
// parameters, the name, the command, the run's error, explanations.
func hostileRun() *Run {
	key := "k<img src=x onerror=alert(1)>\"" + hostile
	events := []history.Event{
		{Index: 0, Time: 1e6, Process: 0, Type: history.Invoke, F: history.Acquire, Key: key},
		{Index: 1, Time: 2e6, Process: 0, Type: history.OK, F: history.Acquire, Key: key, Token: 1},
		{Index: 2, Time: 3e6, Process: history.NemesisProcess, Type: history.Invoke, F: "pause" + hostile, Nodes: []string{hostile, "c1"}},
		{Index: 3, Time: 4e6, Process: 0, Type: history.Invoke, F: history.Read, Key: key, Token: 1},
		{Index: 4, Time: 5e6, Process: 0, Type: history.OK, F: history.Read, Key: key, Token: 1, Value: history.Int64(0)},
		{Index: 5, Time: 6e6, Process: 1, Type: history.Invoke, F: history.Acquire, Key: key},
		{Index: 6, Time: 7e6, Process: 1, Type: history.OK, F: history.Acquire, Key: key, Token: 2},
		{Index: 7, Time: 8e6, Process: 1, Type: history.Invoke, F: history.Write, Key: key, Token: 2, Prev: history.Int64(0), Value: history.Int64(1)},
		{Index: 8, Time: 9e6, Process: 1, Type: history.OK, F: history.Write, Key: key, Token: 2, Prev: history.Int64(0), Value: history.Int64(1)},
		{Index: 9, Time: 10e6, Process: 0, Type: history.Invoke, F: history.Write, Key: key, Token: 1, Prev: history.Int64(0), Value: history.Int64(1)},
		{Index: 10, Time: 11e6, Process: 0, Type: history.OK, F: history.Write, Key: key, Token: 1, Prev: history.Int64(0), Value: history.Int64(1)},
		{Index: 11, Time: 12e6, Process: 1, Type: history.Invoke, F: history.Release, Key: key, Token: 2},
		{Index: 12, Time: 13e6, Process: 1, Type: history.Fail, F: history.Release, Key: key, Token: 2, Error: hostile},
		{Index: 13, Time: 14e6, Process: history.NemesisProcess, Type: history.Info, F: "pause" + hostile, Nodes: []string{hostile, "c1"}, Error: hostile},
		{Index: 14, Time: 15e6, Process: 0, Type: history.Invoke, F: history.Release, Key: key, Token: 1},
		{Index: 15, Time: 16e6, Process: 0, Type: history.Info, F: history.Release, Key: key, Token: 1, Error: hostile},
	}
	ops, faults := history.Pair(events)
	return &Run{
		Name: "name" + hostile, Command: "check --name '" + hostile + "'", Started: time.Unix(0, 0), Duration: time.Second,
		Params: []Param{{"clients", "2"}, {"param" + hostile, "value" + hostile}, {"seed", hostile}},
		Events: events, Ops: ops, Faults: faults, Error: "error" + hostile,
		Servers: NewServers("server"+hostile, "query"+hostile, []ServerNode{{Node: "n1" + hostile, Version: "1.0" + hostile, Answer: "answer" + hostile},
			{Node: "n2", Version: UnknownVersion, Error: "error" + hostile}}),
		Result: models.Result{Verdict: models.Invalid, Explanation: "explanation" + hostile, Keys: []models.KeyResult{{
			Key: key, Verdict: models.Invalid, Ops: 6, Explanation: "key explanation" + hostile, Culprits: []int64{9, 7},
		}}},
	}
}

// Everything that came from a client, a server or a person is text in
// the report: no element, attribute or invalid byte gets through.
func TestHostileStringsRenderAsText(t *testing.T) {
	r := hostileRun()
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !utf8.ValidString(out) {
		t.Error("the report is not valid UTF-8")
	}
	for _, bad := range []string{"<script", "<img", "\x00", "\x1b"} {
		if strings.Contains(strings.ToLower(out), bad) {
			i := strings.Index(strings.ToLower(out), bad)
			t.Errorf("the report contains %q: …%s…", bad, out[max(0, i-80):min(len(out), i+80)])
		}
	}
	if !strings.Contains(out, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Error("the hostile string is not shown as escaped text")
	}
	if !strings.Contains(out, `id="story-k_img_src_x_onerror_alert_1___`) {
		t.Error("the story's id is not derived safely from the key")
	}
	// The story is told even with a hostile key.
	if !strings.Contains(out, `class="culprit"`) {
		t.Error("no culprit step in the story")
	}
}

func TestBeliefsAndOverlaps(t *testing.T) {
	r := hostileRun()
	bs := models.Beliefs(r.Ops, r.End())
	if len(bs) != 2 || bs[0].Token != 1 || bs[1].Token != 2 {
		t.Fatalf("beliefs %+v", bs)
	}
	if bs[1].End != 12e6 { // process 1 stops believing when it invokes its release
		t.Errorf("process 1's belief ends at %d", bs[1].End)
	}
	if bs[0].End != 15e6 { // process 0 invoked its release (which ended in info)
		t.Errorf("process 0's belief ends at %d", bs[0].End)
	}
	ovs := models.Overlaps(bs)
	if len(ovs) != 1 || ovs[0].Start != 7e6 || ovs[0].End != 12e6 || len(ovs[0].Holders) != 2 {
		t.Fatalf("overlaps %+v", ovs)
	}
	// Touching beliefs do not overlap.
	if got := models.Overlaps([]models.Belief{{Process: 0, Key: "k", Start: 0, End: 5}, {Process: 1, Key: "k", Start: 5, End: 9}}); len(got) != 0 {
		t.Errorf("touching beliefs overlap: %+v", got)
	}
}

// A run that recorded nothing (it failed during setup) still gets a
// report, results and JUnit that say so.
func TestReportOfAnEmptyRun(t *testing.T) {
	r := &Run{Name: "empty", Error: "setting up the system under test: no Docker", Result: models.Result{Verdict: models.Unknown, Explanation: "nothing to check"},
		Events: []history.Event{{Index: 0, Time: 5, Process: history.NemesisProcess, Type: history.Info, F: "pause", Error: "nothing to hit"}}}
	r.Ops, r.Faults = history.Pair(r.Events)
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "No operations were recorded") || !strings.Contains(buf.String(), "no Docker") {
		t.Error("the empty report does not say what happened")
	}
	buf.Reset()
	if err := WriteJUnit(&buf, r); err != nil || !strings.Contains(buf.String(), `<testcase name="run"`) {
		t.Errorf("JUnit of an empty run: %v\n%s", err, buf.String())
	}
	if s := StepSummary(r); !strings.Contains(s, "UNKNOWN") {
		t.Errorf("summary: %s", s)
	}
}
