package compare

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compare/result"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/models/verdict"
	"github.com/fencecheck/fencecheck/runstore"
)

// ExitMissing is `check compare merge`'s exit code when runs are missing
// (a shard did not come back, or stopped early) but the rest ran: the
// comparison is incomplete, as a run whose outcome is unknown (2).
const ExitMissing = harness.ExitUnknown

// ShardError is a merge refused: shard directories that are not
// shards, or do not fit together. The message names the shards and the
// fix.
type ShardError struct{ Msg string }

func (e *ShardError) Error() string { return e.Msg }

func refuse(format string, args ...any) error { return &ShardError{Msg: fmt.Sprintf(format, args...)} }

type loadedShard struct {
	dir string
	c   *result.Comparison
}

// Merge combines the partial comparisons that `check compare --shard`
// wrote into dirs into the comparison one machine would have written,
// and writes its compare.json, compare.md and compare.html into out.
// Each cell is summarized by AggregateCell from the runs the shards
// recorded, in run order, as Run does; each run's link is rewritten
// relative to out. Shards of different matrices, or split differently,
// or given twice, are refused (*ShardError) before anything is
// written. Runs no shard brought back are listed in Missing and counted
// in their cells; MergeExitCode says what that means for the exit code.
func Merge(dirs []string, out string) (*result.Comparison, error) {
	if len(dirs) == 0 {
		return nil, refuse("no shard directories given: pass the --store directory of every `check compare --shard I/N` run")
	}
	outAbs, err := filepath.Abs(out)
	if err != nil {
		return nil, usage.Errorf("out", "%v", err)
	}
	var shards []loadedShard
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, refuse("%s: %v", d, err)
		}
		if abs == outAbs {
			return nil, usage.Errorf("out", "%s is a shard's directory; merging there would overwrite its partial %s (give another --out)", out, runstore.CompareJSON)
		}
		c, err := result.ReadComparison(runstore.Comparison(d).JSON())
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, refuse("%s has no %s: pass the --store directory of a `check compare --shard I/N` run", d, runstore.CompareJSON)
		case err != nil:
			return nil, refuse("%v", err)
		case c.Shard == nil:
			return nil, refuse("%s holds a whole comparison, not a shard's (it was not run with --shard I/N); there is nothing to merge", d)
		}
		if err := consistent(c); err != nil {
			return nil, refuse("%s: %v", d, err)
		}
		shards = append(shards, loadedShard{dir: abs, c: c})
	}
	first := shards[0]
	for _, s := range shards[1:] {
		if s.c.Shard.Count != first.c.Shard.Count {
			return nil, refuse("shard %s (%s) and shard %s (%s) cut the matrix into different numbers of shards: run every shard with the same N",
				first.c.Shard, first.dir, s.c.Shard, s.dir)
		}
		if s.c.Shard.Matrix != first.c.Shard.Matrix {
			return nil, refuse("shards of different matrices: %s", difference(first.c.Shard, s.c.Shard))
		}
	}
	for i, a := range shards {
		for _, b := range shards[:i] {
			if a.c.Shard.Index == b.c.Shard.Index {
				return nil, refuse("shard %s is given twice (%s and %s): pass each shard's directory once", a.c.Shard, b.dir, a.dir)
			}
		}
	}
	slices.SortFunc(shards, func(a, b loadedShard) int { return a.c.Shard.Index - b.c.Shard.Index })
	return merged(shards, outAbs)
}

// consistent checks that a shard's runs are the pairs it says it held.
func consistent(c *result.Comparison) error {
	runs := 0
	for i, r := range c.Rows {
		if len(r.Cells) != len(c.Faults) {
			return fmt.Errorf("row %d has %d cells for %d faults", i+1, len(r.Cells), len(c.Faults))
		}
		for _, cell := range r.Cells {
			runs += len(cell.Runs)
		}
	}
	if runs != len(c.Shard.Held) {
		return fmt.Errorf("%s lists %d runs held but its cells have %d", runstore.CompareJSON, len(c.Shard.Held), runs)
	}
	for _, p := range c.Shard.Held {
		if p.Row < 0 || p.Row >= len(c.Rows) || !slices.Contains(c.Faults, p.Fault) || p.Run < 0 || p.Run >= c.Runs {
			return fmt.Errorf("%s holds a run outside the matrix (row %d, %s, run %d)", runstore.CompareJSON, p.Row, p.Fault, p.Run)
		}
		if !slices.Contains(c.Shard.Pairs, p) {
			return fmt.Errorf("%s holds a run it was not given (row %d, %s, run %d)", runstore.CompareJSON, p.Row, p.Fault, p.Run)
		}
	}
	return nil
}

// difference names the first flag whose value two shards' matrices
// disagree on: "shard 2/3 ran --time-limit 20s, shard 1/3 15s".
func difference(a, b *result.CompareShard) string {
	values := func(s *result.CompareShard) map[string]string {
		m := map[string]string{}
		for _, f := range s.Definition {
			m[f.Flag] = f.Value
		}
		return m
	}
	va, vb := values(a), values(b)
	var flags []string
	for _, f := range a.Definition {
		flags = append(flags, f.Flag)
	}
	for _, f := range b.Definition {
		if _, ok := va[f.Flag]; !ok {
			flags = append(flags, f.Flag)
		}
	}
	var diffs []string
	for _, f := range flags {
		if va[f] != vb[f] {
			diffs = append(diffs, fmt.Sprintf("shard %s ran --%s %s, shard %s %s", b, f, show(vb[f]), a, show(va[f])))
		}
	}
	if len(diffs) == 0 {
		return fmt.Sprintf("shard %s's matrix is %s, shard %s's %s", b, b.Matrix, a, a.Matrix)
	}
	return strings.Join(diffs, "; ") + " (every shard must run the same matrix)"
}

func show(v string) string {
	if v == "" {
		return `""`
	}
	return v
}

func merged(shards []loadedShard, out string) (*result.Comparison, error) {
	first := shards[0].c
	c := &result.Comparison{
		Started: first.Started, Preset: first.Preset, Published: first.Published, Seed: first.Seed, Runs: first.Runs, TimeLimitS: first.TimeLimitS,
		Faults: first.Faults, Clients: first.Clients, Keys: first.Keys, Nodes: first.Nodes, LeaseTTLS: first.LeaseTTLS,
	}
	got := map[result.ComparePair]result.CompareRun{}
	from := map[result.ComparePair]string{}
	for _, s := range shards {
		c.Started = min(c.Started, s.c.Started) // one layout: the earliest sorts first
		c.DurationS = max(c.DurationS, s.c.DurationS)
		c.Interrupted = c.Interrupted || s.c.Interrupted
		rel, err := filepath.Rel(out, s.dir)
		if err != nil {
			return nil, usage.Errorf("out", "%s and %s share no path for relative links: %v", out, s.dir, err)
		}
		c.Sources = append(c.Sources, result.CompareSource{Shard: s.c.Shard.String(), Dir: filepath.ToSlash(rel),
			Runs: len(s.c.Shard.Held), DurationS: s.c.DurationS})
		for i, r := range s.c.Rows {
			for _, cell := range r.Cells {
				for _, run := range cell.Runs {
					p := result.ComparePair{Row: i, Fault: cell.Fault, Run: int(run.Seed - s.c.Seed)}
					if !slices.Contains(s.c.Shard.Held, p) {
						return nil, refuse("%s: a run of seed %d in %s × %s is not among the runs it held", s.dir, run.Seed, rowText(r), cell.Fault)
					}
					if why := unfinishedRun(s.dir, run); why != "" {
						// Settled as every stored run is: a run that did
						// not finish is never valid.
						res := verdict.Settle(verdict.Run{Check: models.Result{Verdict: models.Verdict(run.Verdict)}, Unfinished: why})
						run.Verdict, run.Error = string(res.Verdict), "compare.json says valid, but "+why
						c.Unfinished = append(c.Unfinished, fmt.Sprintf("shard %s: %s × %s, run %d (seed %d): %s", s.c.Shard, rowText(r), cell.Fault, p.Run+1, run.Seed, run.Error))
					}
					if run.Dir != "" {
						run.Dir = runstore.Rebase(rel, run.Dir)
					}
					got[p] = run
					from[p] = s.c.Shard.String()
				}
			}
		}
	}
	// Which shard should have run what: the same cut the shards made,
	// from what their compare.json says of the matrix.
	var pairs []result.ComparePair
	for i, r := range first.Rows {
		for _, cell := range r.Cells {
			if cell.NotApplicable == "" {
				for k := range first.Runs {
					pairs = append(pairs, result.ComparePair{Row: i, Fault: cell.Fault, Run: k})
				}
			}
		}
	}
	timeLimit := time.Duration(first.TimeLimitS * float64(time.Second))
	assigned := Slice(pairs, func(p result.ComparePair) time.Duration {
		return expectedDuration(registry.Cluster(first.Rows[p.Row].Cluster), timeLimit)
	}, first.Shard.Count)
	owner := map[result.ComparePair]int{}
	for i, p := range pairs {
		owner[p] = assigned[i] + 1
	}
	for i, r := range first.Rows {
		row := result.CompareRow{Backend: r.Backend, ServerVersion: r.ServerVersion, Recipe: r.Recipe, Settings: r.Settings, Options: r.Options,
			Storage: r.Storage, Fencing: r.Fencing, Cluster: r.Cluster}
		for _, cell := range r.Cells {
			if cell.NotApplicable != "" {
				row.Cells = append(row.Cells, result.CompareCell{Fault: cell.Fault, NotApplicable: cell.NotApplicable, Verdicts: map[string]int{}})
				continue
			}
			var runs []result.CompareRun
			missing := 0
			for k := range first.Runs {
				p := result.ComparePair{Row: i, Fault: cell.Fault, Run: k}
				if run, ok := got[p]; ok {
					runs = append(runs, run)
					continue
				}
				missing++
				c.Missing = append(c.Missing, result.CompareMissing{Shard: fmt.Sprintf("%d/%d", owner[p], first.Shard.Count),
					Backend: r.BackendLabel(), Recipe: r.RecipeWithSettings(), Storage: r.Storage, Fencing: r.Fencing, Fault: cell.Fault, Run: k + 1})
			}
			merged := result.CompareCell{Fault: cell.Fault, Verdicts: map[string]int{}}
			if len(runs) > 0 {
				merged = AggregateCell(cell.Fault, runs)
			}
			merged.Missing = missing
			row.Cells = append(row.Cells, merged)
		}
		c.Rows = append(c.Rows, row)
	}
	c.Errors = countErrors(c)
	if err := result.WriteComparison(out, c); err != nil {
		return c, fmt.Errorf("writing the merged comparison: %w (choose another --out)", err)
	}
	return c, nil
}

// unfinishedRun says why a run its shard called valid cannot be: its
// history, in the shard's directory, is missing or does not end with the
// end event a finished run writes last (only its last line is read). ""
// for a run that finished, and for any run not called valid (a violation
// stands; unknown and error say so already).
func unfinishedRun(shardDir string, run result.CompareRun) string {
	if run.Verdict != string(models.Valid) {
		return ""
	}
	if run.Dir == "" {
		return "it has no run directory to show that it finished"
	}
	hist := runstore.Comparison(shardDir).Run(run.Dir).History()
	ended, err := history.Ended(os.DirFS(filepath.Dir(hist)), filepath.Base(hist))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("%s is missing, so nothing shows that the run finished", hist)
	case err != nil:
		return fmt.Sprintf("%s cannot be read (%v)", hist, err)
	case !ended:
		return fmt.Sprintf("%s does not end with the end event: the run did not finish (it was killed, crashed or interrupted, or a fencecheck older than the end event recorded it)", hist)
	}
	return ""
}

func rowText(r result.CompareRow) string {
	return fmt.Sprintf("%s %s %s %s", r.BackendLabel(), r.RecipeWithSettings(), r.Storage, r.Fencing)
}

// MergeExitCode is `check compare merge`'s exit code: as ExitCode (255
// when a run could not be carried out or a shard was interrupted), else
// ExitMissing (2) when runs are missing or a run called valid is not
// shown to have finished (Unfinished), else 0.
func MergeExitCode(c *result.Comparison) int {
	if code := ExitCode(c); code != 0 {
		return code
	}
	if len(c.Missing) > 0 || len(c.Unfinished) > 0 {
		return ExitMissing
	}
	return 0
}

// MissingShards are the shards none of whose runs came back, e.g.
// ["3/3"], for the merge's message.
func MissingShards(c *result.Comparison) []string {
	var out []string
	for _, m := range c.Missing {
		if !slices.Contains(out, m.Shard) && !slices.ContainsFunc(c.Sources, func(s result.CompareSource) bool { return s.Shard == m.Shard }) {
			out = append(out, m.Shard)
		}
	}
	return out
}
