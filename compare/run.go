package compare

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/compare/result"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/runstore"
)

// Run runs every applicable cell of m, m.Parallel runs at a time (one
// when it is 0), each on its own cluster and with its directory under dir, and writes compare.json, compare.md and
// compare.html into dir (after every cell, so a long comparison can be
// watched). progress gets a line per run. The first interrupt stops the
// run going on (it is still checked) and skips the rest. The error is
// about writing the tables; failed runs are in the comparison (Errors).
func Run(sig harness.Signals, m *Matrix, dir string, progress io.Writer) (*result.Comparison, error) {
	return run(sig, m, nil, dir, progress)
}

// RunShard runs the pairs of m that shard s holds (ShardPairs), as Run
// does, and writes a partial compare.json (and its tables) into dir:
// the comparison with only this shard's runs, and the shard, the
// matrix's fingerprint and the pairs it was given and ran. Merge puts
// the shards together.
func RunShard(sig harness.Signals, m *Matrix, s Shard, dir string, progress io.Writer) (*result.Comparison, error) {
	return run(sig, m, m.shardInfo(s), dir, progress)
}

// run runs every applicable pair of m, or only shard's when shard is
// not nil.
func run(sig harness.Signals, m *Matrix, shard *result.CompareShard, dir string, progress io.Writer) (*result.Comparison, error) {
	if progress == nil {
		progress = io.Discard
	}
	started := time.Now()
	c := &result.Comparison{
		Started: started.UTC().Format("2006-01-02T15:04:05Z"), Preset: m.Preset, Published: m.Published, Seed: m.Seed, Runs: m.Runs,
		TimeLimitS: m.TimeLimit.Seconds(), Faults: m.Faults,
		Clients: m.Base.Clients, Keys: m.Base.Keys, Nodes: m.Base.Nodes, LeaseTTLS: m.Base.LeaseTTL.Seconds(),
		Shard: shard,
	}
	take := func(int, string, int) bool { return true }
	if shard != nil {
		take = func(row int, fault string, run int) bool {
			return slices.Contains(shard.Pairs, result.ComparePair{Row: row, Fault: fault, Run: run})
		}
	}
	total := 0
	for i, r := range m.Rows {
		c.Rows = append(c.Rows, result.CompareRow{Backend: r.Backend, ServerVersion: r.ServerVersion, Recipe: r.RecipeLabel(), Settings: r.SettingsLabel(),
			Options: r.settings().Options, Storage: r.Storage, Fencing: r.Fencing, Cluster: string(r.Cluster)})
		for _, f := range m.Faults {
			cell := result.CompareCell{Fault: f, Verdicts: map[string]int{}}
			if why := m.Applicable(r, f); why != "" {
				cell.NotApplicable = why
			} else {
				for k := range m.Runs {
					if take(i, f, k) {
						total++
					}
				}
			}
			c.Rows[i].Cells = append(c.Rows[i].Cells, cell)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return c, fmt.Errorf("creating %s: %w (choose another with --store)", dir, err)
	}
	what := ""
	if shard != nil {
		what = fmt.Sprintf(" (shard %s, matrix %s)", shard, shard.Matrix)
	}
	if m.Parallel > 1 {
		what += fmt.Sprintf(", %d at a time", m.Parallel)
	}
	fmt.Fprintf(progress, "compare: %s × %s, %s of %s%s, seed %d, store %s\n",
		words.Plural(len(m.Rows), "row"), words.Plural(len(m.Faults), "fault"), words.Plural(total, "run"), m.TimeLimit, what, m.Seed, dir)
	// Runs that need the same containers share them, one after another
	// (harness.Clusters); the last are removed when the matrix ends.
	clusters := harness.NewClusters()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := clusters.Close(ctx); err != nil {
			fmt.Fprintf(progress, "compare: %v\n", err)
		}
	}()
	// The tables exist from the start, every cell "not run": a comparison
	// killed before its first cell is complete still says what it was
	// (and a shard of it is merged as missing runs, not refused).
	if err := result.WriteComparison(dir, c); err != nil {
		return c, fmt.Errorf("writing the comparison: %w", err)
	}
	s := &schedule{sig: sig, m: m, c: c, shard: shard, dir: dir, progress: progress, clusters: clusters, take: take, started: started}
	if err := s.run(); err != nil {
		return c, err
	}
	c.Errors = countErrors(c)
	c.DurationS = time.Since(started).Seconds()
	if err := result.WriteComparison(dir, c); err != nil {
		return c, fmt.Errorf("writing the comparison: %w", err)
	}
	fmt.Fprintf(progress, "compare: done in %s: %s\n", time.Since(started).Round(time.Second), runstore.Comparison(dir).HTML())
	return c, nil
}

func runLine(r result.CompareRun) string {
	s := r.Verdict
	if r.FirstViolationS != nil {
		s += fmt.Sprintf(", first violation at %.1f s", *r.FirstViolationS)
	}
	if r.LostShareMin != nil && r.LostShareMax != nil {
		s += ", lost " + models.ShareText(*r.LostShareMin, *r.LostShareMax) + " of acknowledged updates"
	}
	s += fmt.Sprintf(", %d ok acquires, %.0f s", r.AcquireOK, r.DurationS)
	if r.Error != "" {
		s += ": " + strings.Join(strings.Fields(r.Error), " ")
	}
	if r.Dir != "" {
		s += " → " + r.Dir
	}
	return s
}

func countErrors(c *result.Comparison) int {
	n := 0
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			n += cell.Verdicts[result.Error]
		}
	}
	return n
}

// ExitCode is `check compare`'s exit code: 0 when every cell ran
// (whatever the verdicts), 255 when a run could not be carried out or an
// interrupt kept cells from running.
func ExitCode(c *result.Comparison) int {
	if c == nil || c.Errors > 0 || c.Interrupted {
		return harness.ExitFailed
	}
	return harness.ExitValid
}
