package compare

import (
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/fencecheck/fencecheck/compare/result"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// AggregateCell summarizes a cell's runs: verdict counts, the median time
// to the first violation, acquisitions per second and the share of
// acquisitions that succeeded.
func AggregateCell(fault string, runs []result.CompareRun) result.CompareCell {
	c := result.CompareCell{Fault: fault, Verdicts: map[string]int{}, Runs: runs}
	var firsts []float64
	var ok, all, rated int
	var rate float64
	for _, r := range runs {
		c.Verdicts[r.Verdict]++
		if r.FirstViolationS != nil {
			firsts = append(firsts, *r.FirstViolationS)
		}
		n := r.AcquireOK + r.AcquireFail + r.AcquireInfo
		ok += r.AcquireOK
		all += n
		if n > 0 && r.TimeLimitS > 0 {
			rate += float64(r.AcquireOK) / r.TimeLimitS
			rated++
		}
	}
	if len(firsts) > 0 {
		med := median(firsts)
		c.MedianFirstViolationS = &med
	}
	if rated > 0 {
		c.AcquiresPerS = rate / float64(rated)
	}
	if all > 0 {
		share := float64(ok) / float64(all)
		c.AcquireOKShare = &share
	}
	var lost []float64
	for _, r := range runs {
		if r.LostShareMin == nil || r.LostShareMax == nil {
			continue
		}
		lost = append(lost, *r.LostShareMin)
		if len(c.LostShareRange) == 0 {
			c.LostShareRange = []float64{*r.LostShareMin, *r.LostShareMax}
		}
		c.LostShareRange[0] = min(c.LostShareRange[0], *r.LostShareMin)
		c.LostShareRange[1] = max(c.LostShareRange[1], *r.LostShareMax)
	}
	for _, r := range runs {
		if r.ExpiredGrants != nil {
			n := *r.ExpiredGrants
			if c.ExpiredGrants != nil {
				n += *c.ExpiredGrants
			}
			c.ExpiredGrants, c.Grants = &n, c.Grants+r.Grants
		}
	}
	if len(lost) > 0 {
		med := median(lost)
		c.MedianLostShare = &med
	}
	c.PoolExposures()
	return c
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// FirstViolation is when the earliest culprit op of an invalid result
// completed, in the history's time (since the start of the workload).
func FirstViolation(res models.Result, ops []history.Op) (time.Duration, bool) {
	byIndex := map[int64]history.Op{}
	for _, o := range ops {
		byIndex[o.InvokeIndex] = o
	}
	best := time.Duration(-1)
	for _, k := range res.Keys {
		if len(k.Culprits) == 0 {
			continue
		}
		o, ok := byIndex[k.Culprits[0]]
		if !ok {
			continue
		}
		if t := time.Duration(o.Ended()); best < 0 || t < best {
			best = t
		}
	}
	return best, best >= 0
}

// summarizeRun sums up one finished run from its outcome: the counts and
// the lost share from the ops the run recorded (as results.json has them),
// the first violation from the verdict's culprits. Everything comes from
// the outcome in memory; the run's directory is only linked.
func summarizeRun(cfg harness.Config, root string, out *harness.RunResult, runErr error, took time.Duration) result.CompareRun {
	r := result.CompareRun{Seed: cfg.Seed, TimeLimitS: cfg.TimeLimit.Seconds(), DurationS: took.Seconds(), Verdict: result.Error}
	if out != nil {
		if rel, err := filepath.Rel(root, out.Dir); err == nil && out.Dir != "" {
			r.Dir = filepath.ToSlash(rel)
		}
		if runErr == nil {
			r.Verdict = string(out.Result.Verdict)
		}
	}
	if runErr != nil {
		r.Error = runErr.Error()
	}
	if out == nil || out.Report == nil {
		return r
	}
	if sv := out.Report.Servers; sv != nil {
		r.Servers = sv.Summary
	}
	if g := out.Report.ExpiredGrants; g != nil && g.Counted {
		n := g.Count
		r.ExpiredGrants, r.Grants = &n, g.Grants
	}
	if x := out.Result.Exposures; x != nil {
		counts := x.ExposureCounts
		r.Exposures = &counts
	}
	ops := out.Report.Ops
	acq := reports.ComputeStats(ops).Ops[history.Acquire]
	r.AcquireOK, r.AcquireFail, r.AcquireInfo = acq[string(history.OK)], acq[string(history.Fail)], acq[string(history.Info)]
	damage := models.ComputeDamage(ops)
	r.LostShareMin, r.LostShareMax = damage.LostShareMin, damage.LostShareMax
	if out.Result.Verdict == models.Invalid {
		if t, ok := FirstViolation(out.Result, ops); ok {
			s := t.Seconds()
			r.FirstViolationS = &s
		}
		if cfg.StopOnViolation && len(out.Report.Events) > 0 {
			// The workload ended at the violation: rates are per second
			// of what was run, not of the time limit.
			r.TimeLimitS = min(r.TimeLimitS, time.Duration(out.Report.Events[len(out.Report.Events)-1].Time).Seconds())
		}
	}
	return r
}
