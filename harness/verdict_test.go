package harness

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// junitCounts reads the failures and errors of a JUnit file and the names
// of its test cases.
func junitCounts(t *testing.T, path string) (failures, errors int, cases []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Suites   []struct {
			Cases []struct {
				Name string `xml:"name,attr"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			cases = append(cases, c.Name)
		}
	}
	return doc.Failures, doc.Errors, cases
}

func readResults(t *testing.T, dir string) reports.Results {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res reports.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

// interruptAfter cancels Stop d after the workload starts.
func interruptAfter(st *runState, d time.Duration) (Signals, func() time.Time) {
	stop, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var fired time.Time
	st.phaseHook = func(p string) {
		if p == "workload" {
			time.AfterFunc(d, func() {
				mu.Lock()
				fired = time.Now()
				mu.Unlock()
				cancel()
			})
		}
	}
	return Signals{Stop: stop, Abort: context.Background()}, func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return fired
	}
}

// A fenced run interrupted a second into its 60 s workload found no
// violation in what ran, but it did not run: its verdict is unknown (exit
// 2), results.json and JUnit say so, and the per-key results stay as
// information.
func TestInterruptedFencedRunIsUnknown(t *testing.T) {
	cfg := memoryConfig(t, "all", "pause")
	cfg.TimeLimit = time.Minute
	cfg.Keys = 2
	junit := filepath.Join(t.TempDir(), "junit.xml")
	st := &runState{}
	sig, fired := interruptAfter(st, 1500*time.Millisecond)
	out, err := runReporting(t, sig, cfg, Outputs{JUnit: junit}, st)
	if err != nil {
		t.Fatal(err)
	}
	if fired().IsZero() {
		t.Fatal("the interrupt never came")
	}
	checkStore(t, out, err)
	if out.Result.Verdict != models.Unknown || ExitCode(out.Result.Verdict) != ExitUnknown {
		t.Fatalf("verdict %s (exit %d): %s; want unknown (exit 2)", out.Result.Verdict, ExitCode(out.Result.Verdict), out.Result.Explanation)
	}
	for _, want := range []string{"interrupted after 1.", "of the 1m0s workload", "no violation in what ran, but the run did not finish"} {
		if !strings.Contains(out.Result.Explanation, want) {
			t.Errorf("the explanation %q does not say %q", out.Result.Explanation, want)
		}
	}
	if len(out.Result.Keys) != 2 {
		t.Fatalf("per-key results: %+v", out.Result.Keys)
	}
	for _, k := range out.Result.Keys {
		if k.Verdict == models.Invalid {
			t.Errorf("fenced key %s invalid: %s", k.Key, k.Explanation)
		}
	}
	res := readResults(t, out.Dir)
	if !res.Interrupted || res.Incomplete == "" || res.Verdict != models.Unknown {
		t.Errorf("results.json: verdict %s, interrupted %v, incomplete %q", res.Verdict, res.Interrupted, res.Incomplete)
	}
	failures, errs, cases := junitCounts(t, junit)
	if failures+errs == 0 {
		t.Errorf("JUnit passes an interrupted run: cases %v", cases)
	}
	t.Logf("%s: %s; JUnit %d failures, %d errors, cases %v", out.Result.Verdict, out.Result.Explanation, failures, errs, cases)
}

// An unfenced run interrupted after a violation was found stays invalid
// (exit 1): the history that shows it is real. The run still says it did
// not finish.
func TestInterruptedRunWithAViolationIsInvalid(t *testing.T) {
	cfg := memoryConfig(t, "none", "pause-holder")
	cfg.TimeLimit = time.Minute
	junit := filepath.Join(t.TempDir(), "junit.xml")
	st := &runState{}
	sig, _ := interruptAfter(st, 3*time.Second)
	out, err := runReporting(t, sig, cfg, Outputs{JUnit: junit}, st)
	if err != nil {
		t.Fatal(err)
	}
	checkStore(t, out, err)
	if out.Result.Verdict != models.Invalid || ExitCode(out.Result.Verdict) != ExitInvalid {
		t.Fatalf("verdict %s: %s; want invalid", out.Result.Verdict, out.Result.Explanation)
	}
	if !strings.Contains(out.Result.Explanation, "stale") {
		t.Errorf("the explanation is not the violation's: %s", out.Result.Explanation)
	}
	res := readResults(t, out.Dir)
	if !strings.Contains(res.Incomplete, "interrupted after") {
		t.Errorf("results.json does not say the run was cut short: incomplete %q", res.Incomplete)
	}
	failures, errs, cases := junitCounts(t, junit)
	if failures == 0 {
		t.Errorf("JUnit has no failure for an invalid run: %d errors, cases %v", errs, cases)
	}
}

// A run interrupted after its workload but before its final reads (during
// the heal) is unknown: without the final reads a lost update at the end
// goes unseen.
func TestInterruptBeforeFinalReadsIsUnknown(t *testing.T) {
	cfg := memoryConfig(t, "all", "pause")
	cfg.TimeLimit = time.Second
	in := newInterrupter("heal", 0, false)
	defer in.close()
	out, err := runWith(in.signals(), cfg, nil, &runState{phaseHook: in.hook})
	if err != nil {
		t.Fatal(err)
	}
	checkStore(t, out, err)
	if out.Result.Verdict != models.Unknown {
		t.Fatalf("verdict %s: %s; want unknown", out.Result.Verdict, out.Result.Explanation)
	}
	if !strings.Contains(out.Result.Explanation, "before the final reads") {
		t.Errorf("the explanation does not say the final reads did not happen: %s", out.Result.Explanation)
	}
}

// runReporting is runWith for a test that reports to o as well.
func runReporting(t *testing.T, sig Signals, cfg Config, o Outputs, st *runState) (*RunResult, error) {
	t.Helper()
	test, err := Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if test, err = test.WithOutputs(o); err != nil {
		t.Fatal(err)
	}
	return runTest(sig, test, nil, st)
}
