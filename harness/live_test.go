package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/models"
)

// The live check hears of the stale write as it happens and, with
// StopOnViolation, ends the workload there: the run heals, takes the final
// reads, checks and reports, exit invalid, long before its time limit and
// without counting as interrupted. The final check agrees with the live one.
func TestStopOnViolationEndsTheWorkloadEarly(t *testing.T) {
	cfg := memoryConfig(t, "none", "pause-holder")
	cfg.TimeLimit = 60 * time.Second
	cfg.StopOnViolation = true
	cfg.Seed = 7
	start := time.Now()
	out, err := Run(quiet(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if out.Result.Verdict != models.Invalid || out.Interrupted {
		t.Fatalf("verdict %s, interrupted %v: %s", out.Result.Verdict, out.Interrupted, out.Result.Explanation)
	}
	if took > 30*time.Second {
		t.Fatalf("the run took %s of its 60s time limit", took)
	}
	log, err := os.ReadFile(filepath.Join(out.Dir, "check.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"violation found while the test runs: key k0: ", "--stop-on-violation: ending the workload", "final reads"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("check.log does not say %q:\n%s", want, log)
		}
	}
	// The live check tells the op it could not place; the final verdict
	// says the same, after the accepted stale write that caused it when
	// there is one (models.StaleWriteFirst).
	_, live, _ := strings.Cut(string(log), "violation found while the test runs: key k0: ")
	live, _, _ = strings.Cut(live, "\n")
	if final := out.Result.Keys[0].Explanation; live == "" || !strings.HasSuffix(final, live) {
		t.Errorf("the verdict %q does not end with what the live check found, %q", final, live)
	}
}

// Without the flag the live check only tells: the run goes to its time
// limit, and a fenced run hears of nothing.
func TestLiveCheckOnlyTellsWithoutTheFlag(t *testing.T) {
	cfg := memoryConfig(t, "all", "pause-holder")
	cfg.Seed = 7
	out, err := Run(quiet(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out.Result.Verdict != models.Valid {
		t.Fatalf("verdict %s: %s", out.Result.Verdict, out.Result.Explanation)
	}
	log, _ := os.ReadFile(filepath.Join(out.Dir, "check.log"))
	if strings.Contains(string(log), "violation found while the test runs") {
		t.Fatalf("a valid run heard of a violation:\n%s", log)
	}
}
