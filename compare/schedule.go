package compare

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/compare/result"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/slots"
	"github.com/fencecheck/fencecheck/internal/units"
)

// job is one run of the matrix: row, fault column and run index.
type job struct{ row, col, run int }

// schedule carries out a matrix's runs on m.Parallel slots (internal/slots),
// each run on its own cluster, and fills the comparison as runs end: a
// cell is summed up, and the tables written, once its last run is in, so
// the pages never show a cell with some of its runs missing while the
// matrix goes on. Runs are handed out in the sequential order (row, fault,
// run), so with one slot nothing differs from running them one by one; a
// cell's runs are kept in run order whatever order they end in.
type schedule struct {
	sig      harness.Signals
	m        *Matrix
	c        *result.Comparison
	shard    *result.CompareShard
	dir      string
	progress io.Writer
	clusters *harness.Clusters
	take     func(row int, fault string, run int) bool
	started  time.Time

	mu   sync.Mutex
	done int
	// runs are each cell's finished runs, by run index; left counts the
	// runs each cell still waits for.
	runs map[[2]int]map[int]result.CompareRun
	left map[[2]int]int
	err  error
}

// jobs are the runs to carry out, in the sequential order.
func (s *schedule) jobs() []job {
	var out []job
	for i := range s.m.Rows {
		for j, f := range s.m.Faults {
			if s.c.Rows[i].Cells[j].NotApplicable != "" {
				continue
			}
			for k := 0; k < s.m.Runs; k++ {
				if s.take(i, f, k) {
					out = append(out, job{i, j, k})
				}
			}
		}
	}
	return out
}

// run carries out every job, at most m.Parallel at once; an interrupt
// hands out no new job, and the cells reached only in part are summed up
// from the runs they have.
func (s *schedule) run() error {
	jobs := s.jobs()
	s.runs, s.left = map[[2]int]map[int]result.CompareRun{}, map[[2]int]int{}
	for _, jb := range jobs {
		s.left[[2]int{jb.row, jb.col}]++
	}
	width := max(1, s.m.Parallel)
	slots.Run(len(jobs), width, func() bool { return s.sig.Stop.Err() != nil }, func(slot, n int) {
		s.one(slot, n, len(jobs), width, jobs[n])
	})
	if s.err != nil {
		return s.err
	}
	if s.sig.Stop.Err() != nil {
		s.c.Interrupted = true
	}
	for cell, runs := range s.runs {
		if s.left[cell] > 0 { // cut short by an interrupt
			s.sumUp(cell, runs)
		}
	}
	if s.shard != nil {
		slices.SortFunc(s.shard.Held, func(a, b result.ComparePair) int {
			return cmpPair(a, b, s.m.Faults)
		})
	}
	return nil
}

// one carries out job jb on slot and records it.
func (s *schedule) one(slot, n, total, width int, jb job) {
	r, f := s.m.Rows[jb.row], s.m.Faults[jb.col]
	s.mu.Lock()
	where := ""
	if width > 1 {
		where = fmt.Sprintf("slot %d: ", slot+1)
	}
	fmt.Fprintf(s.progress, "[%d/%d] %s%s × %s, run %d/%d (seed %d); %d left after this\n",
		n+1, total, where, r, f, jb.run+1, s.m.Runs, s.m.Seed+int64(jb.run), total-n-1)
	s.mu.Unlock()
	t0 := time.Now()
	// The cell was resolved once (Matrix.cell); the run is its Test with
	// this run's seed and store.
	var out *harness.RunResult
	t, err := s.m.runTest(r, f, jb.run, s.dir)
	if err == nil {
		out, err = s.clusters.RunTest(s.sig, t, nil)
	}
	run := summarizeRun(s.runConfig(t, jb), s.dir, out, err, time.Since(t0))

	s.mu.Lock()
	defer s.mu.Unlock()
	s.done++
	if err == nil && out.Interrupted {
		s.c.Interrupted = true
	}
	if s.shard != nil {
		s.shard.Held = append(s.shard.Held, result.ComparePair{Row: jb.row, Fault: f, Run: jb.run})
	}
	line := "        "
	if width > 1 {
		line += fmt.Sprintf("slot %d, %s × %s run %d/%d: ", slot+1, r, f, jb.run+1, s.m.Runs)
	}
	line += runLine(run)
	if eta := s.eta(total); eta != "" {
		line += "; " + eta
	}
	fmt.Fprintln(s.progress, line)
	cell := [2]int{jb.row, jb.col}
	if s.runs[cell] == nil {
		s.runs[cell] = map[int]result.CompareRun{}
	}
	s.runs[cell][jb.run] = run
	if s.left[cell]--; s.left[cell] == 0 {
		s.sumUp(cell, s.runs[cell])
	}
}

// runConfig is what a run's summary reads of its configuration: the
// Test's, or the matrix's for a run whose cell could not be resolved.
func (s *schedule) runConfig(t *harness.Test, jb job) harness.Config {
	if t != nil {
		return t.Config()
	}
	return s.m.Config(s.m.Rows[jb.row], s.m.Faults[jb.col], jb.run, s.dir)
}

// eta is the matrix's time left, from the pace so far: the wall time per
// finished run (slots side by side count once) times the runs not
// finished. "" before the first run ends and after the last.
func (s *schedule) eta(total int) string {
	if s.done == 0 || s.done >= total || s.sig.Stop.Err() != nil {
		return ""
	}
	per := time.Since(s.started) / time.Duration(s.done)
	return fmt.Sprintf("%d of %d done, about %s left", s.done, total, units.FormatDuration((per * time.Duration(total-s.done)).Round(time.Second)))
}

// sumUp puts a cell's runs, in run order, into the comparison and writes
// the tables. The caller holds s.mu.
func (s *schedule) sumUp(cell [2]int, runs map[int]result.CompareRun) {
	keys := make([]int, 0, len(runs))
	for k := range runs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	list := make([]result.CompareRun, 0, len(keys))
	for _, k := range keys {
		list = append(list, runs[k])
	}
	s.c.Rows[cell[0]].Cells[cell[1]] = AggregateCell(s.m.Faults[cell[1]], list)
	s.c.Errors = countErrors(s.c)
	s.c.DurationS = time.Since(s.started).Seconds()
	if s.sig.Stop.Err() != nil {
		s.c.Interrupted = true
	}
	if err := result.WriteComparison(s.dir, s.c); err != nil && s.err == nil {
		s.err = fmt.Errorf("writing the comparison: %w", err)
	}
}

// cmpPair orders a shard's pairs as the matrix runs them: row, then
// fault column, then run.
func cmpPair(a, b result.ComparePair, faults []string) int {
	if a.Row != b.Row {
		return a.Row - b.Row
	}
	if a.Fault != b.Fault {
		return slices.Index(faults, a.Fault) - slices.Index(faults, b.Fault)
	}
	return a.Run - b.Run
}
