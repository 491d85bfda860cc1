package compare

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/compare/result"
)

// A cell shows the lost-update share: the median of the runs' lower
// bounds and the range from the smallest lower bound to the largest upper
// one; runs without a final read are left out, not counted as 0.
func TestAggregateCellLostShare(t *testing.T) {
	runs := []result.CompareRun{
		{Verdict: "invalid", FirstViolationS: secondsPtr(2), AcquireOK: 100, TimeLimitS: 10, LostShareMin: secondsPtr(0.10), LostShareMax: secondsPtr(0.10)},
		{Verdict: "invalid", FirstViolationS: secondsPtr(3), AcquireOK: 100, TimeLimitS: 10, LostShareMin: secondsPtr(0.02), LostShareMax: secondsPtr(0.05)},
		{Verdict: "invalid", FirstViolationS: secondsPtr(4), AcquireOK: 100, TimeLimitS: 10, LostShareMin: secondsPtr(0.04), LostShareMax: secondsPtr(0.04)},
		{Verdict: "unknown", AcquireOK: 100, TimeLimitS: 10}, // final read missing
	}
	c := AggregateCell("pause", runs)
	if c.MedianLostShare == nil || *c.MedianLostShare != 0.04 {
		t.Fatalf("median lost share %v, want 0.04", c.MedianLostShare)
	}
	if len(c.LostShareRange) != 2 || c.LostShareRange[0] != 0.02 || c.LostShareRange[1] != 0.10 {
		t.Fatalf("range %v, want [0.02 0.1]", c.LostShareRange)
	}
	if got := c.StatsText(); got != "first 3.0 s · lost 4% (2–10%) · 10.0 acq/s · 100% ok" {
		t.Fatalf("stats %q", got)
	}
	one := AggregateCell("pause", runs[:1])
	if got := one.LostText(); got != "lost 10%" {
		t.Fatalf("one run: %q", got)
	}
	none := AggregateCell("pause", runs[3:])
	if none.MedianLostShare != nil || none.LostShareRange != nil || strings.Contains(none.StatsText(), "lost") {
		t.Fatalf("no counted run: %+v, %q", none, none.StatsText())
	}
	if got := runLine(runs[1]); !strings.Contains(got, "lost 2–5% of acknowledged updates") {
		t.Fatalf("run line %q", got)
	}
}

// A cell sums the expired-lease grants of the runs that counted them, and
// says so after its other figures.
func TestCellCountsExpiredGrants(t *testing.T) {
	three, one := 3, 1
	c := AggregateCell("pause-all", []result.CompareRun{
		{Verdict: "invalid", AcquireOK: 10, TimeLimitS: 10, ExpiredGrants: &three, Grants: 12},
		{Verdict: "valid", AcquireOK: 10, TimeLimitS: 10, ExpiredGrants: &one, Grants: 11},
		{Verdict: "valid", AcquireOK: 10, TimeLimitS: 10},
	})
	if c.ExpiredGrants == nil || *c.ExpiredGrants != 4 || c.Grants != 23 {
		t.Fatalf("cell: %v of %d", c.ExpiredGrants, c.Grants)
	}
	if got := c.StatsText(); !strings.HasSuffix(got, " · 4 of 23 grants on an expired lease") {
		t.Fatalf("stats text %q", got)
	}
}
