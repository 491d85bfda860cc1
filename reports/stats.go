package reports

import (
	"sort"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/models"
)

// Stats are the counts a report shows beside the verdict.
type Stats struct {
	// Ops counts completions by f, then by type (ok, fail, info).
	Ops map[string]map[string]int `json:"ops"`
	// Fenced counts reads and writes the storage refused as stale.
	Fenced int `json:"fenced"`
	// LeasesLost counts ops a client refused because it knew its lease
	// was gone.
	LeasesLost int `json:"leases_lost"`
	// Acquire latency quantiles of ok acquires, in milliseconds.
	AcquireMillis Quantiles `json:"acquire_ms"`
	// Processes is how many process ids the run used.
	Processes int `json:"processes"`
	// Overlaps counts the intervals in which two or more processes
	// believed they held the same key's lease at once (see Beliefs), and
	// OverlapS is their total length in seconds: mutual exclusion broken,
	// whether or not fencing then saved the storage.
	Overlaps int     `json:"overlaps"`
	OverlapS float64 `json:"overlap_s"`
}

// Quantiles of a latency distribution.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func quantiles(d []time.Duration) Quantiles {
	if len(d) == 0 {
		return Quantiles{}
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	q := func(p float64) float64 {
		i := int(p * float64(len(d)-1))
		return float64(d[i]) / 1e6
	}
	return Quantiles{P50: q(0.5), P95: q(0.95), P99: q(0.99), Max: q(1)}
}

// ComputeStats counts a run's ops.
func ComputeStats(ops []history.Op) Stats {
	s := Stats{Ops: map[string]map[string]int{}}
	var acq []time.Duration
	procs := map[int]bool{}
	var end int64
	for i := range ops {
		o := &ops[i]
		end = max(end, o.Call, o.Done)
		procs[o.Process] = true
		m := s.Ops[o.F]
		if m == nil {
			m = map[string]int{}
			s.Ops[o.F] = m
		}
		m[string(o.Type)]++
		if o.Type == history.Fail && o.Error == lockclient.ErrorFenced {
			s.Fenced++
		}
		if o.Type == history.Fail && o.Error == lockclient.ErrorLeaseLost {
			s.LeasesLost++
		}
		if o.F == history.Acquire && o.Type == history.OK {
			acq = append(acq, time.Duration(o.Return-o.Call))
		}
	}
	s.AcquireMillis = quantiles(acq)
	s.Processes = len(procs)
	for _, ov := range models.Overlaps(models.Beliefs(ops, end)) {
		s.Overlaps++
		s.OverlapS += float64(ov.End-ov.Start) / 1e9
	}
	return s
}
