package compare

import (
	"os"
	"path/filepath"
	"testing"
	"time"

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
