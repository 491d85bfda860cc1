package harness

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/models/verdict"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/runstore"
)

// A recorded run (testdata/powerloss: `check --backend redis --recipe
// setnx-incr --redis-persistence aof-everysec --nemesis power-loss
// --time-limit 30s --seed 211560849854`, Redis 7.0.15) re-checked as
// `check report` does: the power cut at 4.10 s rolled Redis's token counter
// back from 7, so tokens 2 to 7 were granted again. The verdict tells the
// loss with the cut between, and results.json and report.html count the
// contradicted grants beside the exposures.
func TestRecordedPowerLossTellsTheLoss(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{runstore.HistoryFile, runstore.ResultsFile} {
		b, err := os.ReadFile(filepath.Join("testdata", "powerloss", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run, err := reports.LoadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	checked := models.Check(context.Background(), run.Ops, models.Options{})
	x := models.CountExposures(run.Events)
	run.Result = verdict.Settle(verdict.Run{Check: checked, Ops: run.Ops, Unfinished: run.NotFinished(), Failed: run.Error,
		Exposures: &x, Facts: RunFactsOf(run.Params, run.Ops, run.Faults, run.End()), MinExposures: MinExposuresOf(run.Params)})
	want := "token 5 was acknowledged at 0.96 s (to process 0), the power-loss on n1 at 4.10 s lost it, and the tokens went down to 3 at 9.35 s (granted to process 2): tokens must only increase"
	if run.Result.Verdict != models.Invalid || run.Result.Explanation != want {
		t.Fatalf("%s: %s\nwant %s", run.Result.Verdict, run.Result.Explanation, want)
	}
	// Without the faults the check's own sentence stands: the verdict is
	// the same either way.
	plain := verdict.Settle(verdict.Run{Check: checked, Ops: run.Ops})
	if plain.Verdict != models.Invalid || plain.Explanation != "process 2 was granted token 3 at 9.35 s, but token 5 had already been granted at 0.96 s (to process 0): tokens must only increase" {
		t.Errorf("without faults: %s: %s", plain.Verdict, plain.Explanation)
	}
	if unwritten := reports.WriteOutputs(run, "", ""); len(unwritten) > 0 {
		t.Fatal(unwritten)
	}
	res, err := reports.ReadResults(filepath.Join(dir, runstore.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	c := res.ContradictedGrants
	if c == nil || c.ContradictionCounts != (models.ContradictionCounts{Grants: 39, Contradicted: 7, GrantedTwice: 7, WentDown: 5, AfterCrash: 7}) {
		t.Fatalf("results.json's contradicted_grants: %+v", c)
	}
	if c.List[0].Crash != "power-loss on n1" || c.List[0].CrashTime != 4096780420 {
		t.Errorf("first contradiction: %+v", c.List[0])
	}
	if res.Exposures == nil {
		t.Error("results.json has no exposures beside them")
	}
	html, err := os.ReadFile(filepath.Join(dir, runstore.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Contradicted grants:", "7 of 39 acknowledged grants were contradicted (7 tokens granted twice, 5 tokens went down; 7 after a crash)", "power-loss on n1 at 4.10 s"} {
		if !strings.Contains(string(html), s) {
			t.Errorf("report.html lacks %q", s)
		}
	}
}

// The faults models holds to be crashes are faults the registry has, or
// the failover a lock service records itself; and every fault that kills
// a server is one.
func TestCrashFaultsAreRegistered(t *testing.T) {
	for _, f := range models.CrashFaults() {
		if _, ok := nemesis.Lookup(f); !ok && f != FailoverEvent {
			t.Errorf("models.Crash holds %q a crash, but no fault has that name", f)
		}
	}
	for _, f := range nemesis.Names() {
		if (strings.HasPrefix(f, "kill") || strings.HasPrefix(f, "power-loss")) && !models.Crash(f) {
			t.Errorf("fault %s kills a server but models.Crash does not know it", f)
		}
	}
}
