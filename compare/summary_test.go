package compare

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compare/result"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/runstore"
)

// A run is summed up from what harness.Run returned in memory: the same
// numbers results.json has, even when the run's directory is gone by the
// time the cell is summarized.
func TestARunIsSummarizedFromItsOutcomeInMemory(t *testing.T) {
	root := t.TempDir()
	cfg := harness.Config{
		Backend: "memory", Fencing: "none", Nemesis: []string{"pause-holder"}, Clients: 5, Keys: 1,
		TimeLimit: 3 * time.Second, LeaseTTL: 200 * time.Millisecond, Work: 5 * time.Millisecond,
		NemesisInterval: 400 * time.Millisecond, CheckTimeout: time.Minute, Store: root, Seed: 1,
	}
	out, err := harness.Run(quiet(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Report == nil || len(out.Report.Ops) == 0 {
		t.Fatalf("the outcome does not hold the run's ops: %+v", out.Report)
	}
	if out.Result.Verdict != models.Invalid {
		t.Fatalf("an unfenced run under pause-holder: %s, want invalid", out.Result.Verdict)
	}
	onDisk, err := reports.ReadResults(filepath.Join(out.Dir, runstore.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	events, err := history.ParseFile(filepath.Join(out.Dir, runstore.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	diskOps, _ := history.Pair(events)
	if err := os.RemoveAll(out.Dir); err != nil {
		t.Fatal(err)
	}

	r := summarizeRun(cfg, root, out, nil, 3*time.Second)
	acq := onDisk.Stats.Ops[history.Acquire]
	if r.AcquireOK == 0 || r.AcquireOK != acq[string(history.OK)] || r.AcquireFail != acq[string(history.Fail)] || r.AcquireInfo != acq[string(history.Info)] {
		t.Errorf("acquires ok/fail/info %d/%d/%d, results.json has %v", r.AcquireOK, r.AcquireFail, r.AcquireInfo, acq)
	}
	if (r.LostShareMin == nil) != (onDisk.Damage.LostShareMin == nil) ||
		r.LostShareMin != nil && (*r.LostShareMin != *onDisk.Damage.LostShareMin || *r.LostShareMax != *onDisk.Damage.LostShareMax) {
		t.Errorf("lost share %v–%v, results.json has %v–%v", r.LostShareMin, r.LostShareMax, onDisk.Damage.LostShareMin, onDisk.Damage.LostShareMax)
	}
	want, ok := FirstViolation(out.Result, diskOps)
	if !ok || r.FirstViolationS == nil || *r.FirstViolationS != want.Seconds() {
		t.Errorf("first violation %v, want %s from the history on disk", r.FirstViolationS, want)
	}
	if r.Verdict != "invalid" || r.Dir == "" || filepath.IsAbs(r.Dir) {
		t.Errorf("verdict %q, dir %q (want invalid, relative to the comparison)", r.Verdict, r.Dir)
	}

	// A run that could not be carried out is an error with no counts.
	failed := summarizeRun(cfg, root, nil, os.ErrPermission, time.Second)
	if failed.Verdict != "error" || failed.Error == "" || failed.AcquireOK != 0 {
		t.Errorf("failed run %+v", failed)
	}
}

// A cell's exposures are its runs' summed, and the bound is taken over
// the pool; a run that never counted them (it ended before its check)
// adds nothing.
func TestACellPoolsItsRunsExposures(t *testing.T) {
	runs := []result.CompareRun{
		{Verdict: "valid", Exposures: &models.ExposureCounts{Exposures: 20, Refused: 18, NotSent: 2, OutlivedIdle: 1}},
		{Verdict: "valid", Exposures: &models.ExposureCounts{Exposures: 11, Refused: 11}},
		{Verdict: "valid", Exposures: &models.ExposureCounts{Exposures: 12, Refused: 10, Unknown: 2}},
		{Verdict: "error"},
	}
	c := AggregateCell("pause-holder", runs)
	want := models.ExposureCounts{Exposures: 43, Refused: 39, NotSent: 2, Unknown: 2, OutlivedIdle: 1}
	if c.Exposures == nil || *c.Exposures != want || c.ExposureRuns != 3 {
		t.Fatalf("pooled %+v over %d runs, want %+v over 3", c.Exposures, c.ExposureRuns, want)
	}
	if b := c.AdmittedBound; b == nil || b.Decided != 41 || b.Admitted != 0 || b.Low != 0 || b.High < 0.070 || b.High > 0.071 {
		t.Fatalf("bound %+v, want 0 of 41 decided, at most ~7.0 %%", b)
	}
	if got := c.ExposureText(); got != "43 exposures, 39 refused, 2 not sent, 2 unknown · 0 of 41 admitted: at most 7 % per exposure (95 %)" {
		t.Errorf("text %q", got)
	}
	quiet := AggregateCell("none", []result.CompareRun{{Verdict: "valid", Exposures: &models.ExposureCounts{}}, {Verdict: "valid", Exposures: &models.ExposureCounts{}}})
	if quiet.Class() != "unexercised" || quiet.ExposureText() != "not exercised: 0 exposures" || quiet.AdmittedBound != nil {
		t.Errorf("a cell whose runs exposed nothing: class %s, text %q, bound %+v", quiet.Class(), quiet.ExposureText(), quiet.AdmittedBound)
	}
	broken := AggregateCell("pause-holder", []result.CompareRun{{Verdict: "invalid", Exposures: &models.ExposureCounts{Exposures: 4, Admitted: 3, Refused: 1}}})
	if got := broken.ExposureText(); got != "4 exposures, 3 admitted, 1 refused · 3 of 4 admitted: 75 % per exposure (95 % interval 19.4–99.4 %)" {
		t.Errorf("text %q", got)
	}
}
