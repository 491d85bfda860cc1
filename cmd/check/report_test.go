package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// staleWrite is a history in which process 0's write with token 1 is
// admitted after process 1's with token 2.
const staleWrite = `{"index":0,"time":1000000,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":2000000,"process":0,"type":"ok","f":"acquire","key":"k0","token":1}
{"index":2,"time":3000000,"process":0,"type":"invoke","f":"read","key":"k0","token":1}
{"index":3,"time":4000000,"process":0,"type":"ok","f":"read","key":"k0","token":1,"value":0}
{"index":4,"time":4500000,"process":"nemesis","type":"invoke","f":"pause","value":["c1"]}
{"index":5,"time":5000000,"process":1,"type":"invoke","f":"acquire","key":"k0"}
{"index":6,"time":6000000,"process":1,"type":"ok","f":"acquire","key":"k0","token":2}
{"index":7,"time":7000000,"process":1,"type":"invoke","f":"write","key":"k0","token":2,"prev":0,"value":1}
{"index":8,"time":8000000,"process":1,"type":"ok","f":"write","key":"k0","token":2,"prev":0,"value":1}
{"index":9,"time":8500000,"process":"nemesis","type":"info","f":"pause","value":["c1"]}
{"index":10,"time":9000000,"process":0,"type":"invoke","f":"write","key":"k0","token":1,"prev":0,"value":1}
{"index":11,"time":10000000,"process":0,"type":"ok","f":"write","key":"k0","token":1,"prev":0,"value":1}
`

func TestReportRegeneratesAStoredRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "some-test", "20260102T030405.000Z")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(staleWrite), 0o644)
	old := `{"schema":"fencecheck/results/v1","name":"some-test","verdict":"valid","keys":[],"stats":{},` +
		`"params":[{"name":"clients","value":"2"},{"name":"seed","value":"42"}],"command":"check --seed 42",` +
		`"started":"2026-01-02T03:04:05.000Z","duration_s":12.5,"check_s":0,"events":12}`
	os.WriteFile(filepath.Join(dir, "results.json"), []byte(old), 0o644)
	junit := filepath.Join(t.TempDir(), "out", "junit.xml")

	code, out, errOut := runCLI(t, "report", "--junit", junit, dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1 (invalid)\n%s%s", code, out, errOut)
	}
	for _, f := range []string{"report.html", "results.json", "linearizability.html"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s was not written (%v)", f, err)
		}
	}
	var res struct {
		Schema, Name, Verdict, Command, Started string
		DurationS                               float64 `json:"duration_s"`
		Params                                  []struct{ Name, Value string }
		Keys                                    []struct{ Culprits []int64 }
	}
	b, _ := os.ReadFile(filepath.Join(dir, "results.json"))
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Schema != "fencecheck/results/v1" || res.Verdict != "invalid" || res.Name != "some-test" || res.Command != "check --seed 42" ||
		res.Started != "2026-01-02T03:04:05.000Z" || res.DurationS != 12.5 || len(res.Params) != 2 || len(res.Keys) != 1 || len(res.Keys[0].Culprits) == 0 {
		t.Errorf("results.json did not keep the run's parameters or lacks the new verdict: %s", b)
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !strings.Contains(string(html), "a stale lease holder&#39;s write got through") {
		t.Error("report.html does not tell the stale write")
	}
	if x, err := os.ReadFile(junit); err != nil || !strings.Contains(string(x), "<failure") {
		t.Errorf("--junit: %v\n%s", err, x)
	}

	// A history cut by a kill is checked on its complete lines: the stale
	// write's completion was the cut line, so its outcome is unknown and
	// the higher token admitted first makes it harmless — but the run did
	// not finish, so no violation in what is there is no verdict: unknown,
	// and results.json says why, however often the report is regenerated.
	os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(staleWrite[:len(staleWrite)-30]), 0o644)
	for range 2 {
		code, out, errOut := runCLI(t, "report", dir)
		if code != 2 || !strings.Contains(out, "the last line (line 12) was incomplete and was dropped") ||
			!strings.Contains(out, "UNKNOWN: the history is not a finished run's: its last line (line 12) was cut short") {
			t.Errorf("truncated history: exit %d, %s%s", code, out, errOut)
		}
		b, _ := os.ReadFile(filepath.Join(dir, "results.json"))
		var back struct{ Verdict, Unfinished, Incomplete string }
		if json.Unmarshal(b, &back); back.Verdict != "unknown" || !strings.Contains(back.Unfinished, "no end event") || back.Incomplete != "" {
			t.Errorf("results.json of a truncated history: %+v", back)
		}
	}
	// A malformed line in the middle is bad input naming the line.
	lines := strings.SplitAfter(staleWrite, "\n")
	os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(strings.Join(lines[:5], "")+lines[5][:30]+"\n"+strings.Join(lines[6:], "")), 0o644)
	if code, _, errOut := runCLI(t, "report", dir); code != 254 || !strings.Contains(errOut, "line 6") {
		t.Errorf("a broken line in the middle: exit %d, %q", code, errOut)
	}
	if code, _, _ := runCLI(t, "report", filepath.Join(dir, "missing")); code != 254 {
		t.Errorf("missing directory: exit %d", code)
	}
}

func TestServeArguments(t *testing.T) {
	store := t.TempDir()
	for _, args := range [][]string{
		{"serve", "--store", store, "--addr", "0.0.0.0:8080"},
		{"serve", "--store", store, "--addr", "example.com:80"},
		{"serve", "--store", store, "--addr", "8080"},
		{"serve", "--store", filepath.Join(store, "missing")},
		{"serve", "stray"},
	} {
		if code, _, errOut := runCLI(t, args...); code != 254 {
			t.Errorf("%v: exit %d, want 254 (%s)", args, code, errOut)
		}
	}
	// It serves, on a loopback address, until told to stop.
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serveStore(ctx, store, "127.0.0.1:0", io.Discard, func(u string) { urls <- u }) }()
	select {
	case u := <-urls:
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("index: %d", resp.StatusCode)
		}
	case err := <-done:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}
