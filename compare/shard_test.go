package compare

import (
	"context"
	"errors"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compare/result"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/models"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string]Shard{"1/1": {1, 1}, "2/3": {2, 3}, "3/3": {3, 3}, " 7/10 ": {7, 10}} {
		got, err := ParseShard(in)
		if err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, msg := range map[string]string{
		"0/3": "from 1 to 3", "4/3": "from 1 to 3", "x": `"x" is not I/N`, "1/0": "at least 1", "": "is not I/N",
		"2": "is not I/N", "a/3": "is not I/N", "1/b": "is not I/N", "-1/3": "from 1 to 3", "1/-2": "at least 1",
	} {
		_, err := ParseShard(in)
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != "shard" || !strings.Contains(ue.Msg, msg) {
			t.Errorf("ParseShard(%q) = %v, want a --shard error saying %q", in, err, msg)
		}
	}
}

// The cut: every pair in exactly one shard, the same on every call, and
// no shard more than one run's expected time behind another.
func TestSliceCoversEveryPairOnceDeterministicallyAndBalanced(t *testing.T) {
	for _, spec := range []Spec{
		{Preset: "full", Seed: 3},
		{Backends: []string{"memory", "etcd", "redis"}, Faults: []string{"pause-holder", "pause", "partition"}, Runs: 3, Seed: 3},
	} {
		m, err := Expand(spec)
		if err != nil {
			t.Fatal(err)
		}
		all := m.Pairs()
		var longest time.Duration
		for _, p := range all {
			longest = max(longest, m.cost(p))
		}
		for n := 1; n <= 9; n++ {
			seen := map[result.ComparePair]int{}
			var loads []time.Duration
			for i := 1; i <= n; i++ {
				got := m.ShardPairs(Shard{i, n})
				if again := m.ShardPairs(Shard{i, n}); !slices.Equal(got, again) {
					t.Fatalf("%v shard %d/%d differs between two cuts", spec.Backends, i, n)
				}
				var load time.Duration
				for _, p := range got {
					seen[p]++
					load += m.cost(p)
				}
				loads = append(loads, load)
			}
			if len(seen) != len(all) {
				t.Errorf("%d shards hold %d of %d pairs", n, len(seen), len(all))
			}
			for p, k := range seen {
				if k != 1 {
					t.Errorf("%d shards: pair %+v held %d times", n, p, k)
				}
			}
			if spread := slices.Max(loads) - slices.Min(loads); spread > longest {
				t.Errorf("%d shards: loads %v spread %s, more than the longest run (%s)", n, loads, spread, longest)
			}
		}
	}
	// Mixed costs: Docker runs are spread before in-process ones fill the gaps.
	pairs := []result.ComparePair{{Run: 0}, {Run: 1}, {Run: 2}, {Run: 3}, {Run: 4}}
	cost := func(p result.ComparePair) time.Duration { return []time.Duration{1, 5, 1, 5, 2}[p.Run] }
	if got := Slice(pairs, cost, 2); !slices.Equal(got, []int{1, 0, 1, 1, 0}) {
		t.Errorf("Slice = %v", got)
	}
}

func shardSpec(timeLimit time.Duration) Spec {
	return Spec{
		Backends: []string{"memory"}, Faults: []string{"pause-holder", "pause"}, Fencing: []string{"none", "all"},
		Runs: 2, TimeLimit: timeLimit, Seed: 11,
		Base: harness.Config{Clients: 3, LeaseTTL: 200 * time.Millisecond, NemesisInterval: 400 * time.Millisecond, Work: 5 * time.Millisecond},
	}
}

// emptyShard writes shard s's compare.json without running anything (an
// interrupt before the first run).
func emptyShard(t *testing.T, spec Spec, s Shard, dir string) {
	t.Helper()
	m, err := Expand(spec)
	if err != nil {
		t.Fatal(err)
	}
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunShard(harness.Signals{Stop: stopped, Abort: context.Background()}, m, s, dir, nil); err != nil {
		t.Fatal(err)
	}
}

func TestMergeRefusesShardsThatDoNotFit(t *testing.T) {
	root := t.TempDir()
	dir := func(name string) string { return filepath.Join(root, name) }
	emptyShard(t, shardSpec(2*time.Second), Shard{1, 3}, dir("a1"))
	emptyShard(t, shardSpec(3*time.Second), Shard{2, 3}, dir("b2"))
	emptyShard(t, shardSpec(2*time.Second), Shard{2, 3}, dir("a2"))
	emptyShard(t, shardSpec(2*time.Second), Shard{2, 4}, dir("a2of4"))
	emptyShard(t, shardSpec(2*time.Second), Shard{2, 3}, dir("a2again"))
	m, _ := Expand(shardSpec(2 * time.Second))
	if err := result.WriteComparison(dir("whole"), &result.Comparison{Faults: m.Faults}); err != nil {
		t.Fatal(err)
	}
	out := dir("merged")
	for _, c := range []struct {
		dirs []string
		out  string
		want string
	}{
		{[]string{dir("a1"), dir("b2")}, out, "shard 2/3 ran --time-limit 3s, shard 1/3 2s"},
		{[]string{dir("a1"), dir("a2"), dir("a2again")}, out, "shard 2/3 is given twice"},
		{[]string{dir("a1"), dir("a1")}, out, "shard 1/3 is given twice"},
		{[]string{dir("a1"), dir("a2of4")}, out, "different numbers of shards"},
		{[]string{dir("a1"), dir("whole")}, out, "not a shard's"},
		{[]string{dir("a1"), dir("nowhere")}, out, "has no compare.json"},
		{[]string{dir("a1"), dir("a2")}, dir("a2"), "would overwrite its partial compare.json"},
		{nil, out, "no shard directories"},
	} {
		_, err := Merge(c.dirs, c.out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Merge(%v) = %v, want an error saying %q", c.dirs, err, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "compare.json")); err == nil {
		t.Error("a refused merge wrote compare.json")
	}
}

// A comparison cut into shards by Slice and merged is the comparison,
// number for number: the merge summarizes with the same code from the
// same runs. (Cut from one real run, so the numbers are the same runs'.)
func TestMergeOfACutComparisonIsTheComparison(t *testing.T) {
	m, err := Expand(shardSpec(2 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	whole, err := Run(quiet(), m, filepath.Join(root, "whole"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for i := 1; i <= 3; i++ {
		s := Shard{i, 3}
		part := *whole
		part.Shard = m.shardInfo(s)
		part.Rows = nil
		for ri, r := range whole.Rows {
			row := r
			row.Cells = nil
			for _, cell := range r.Cells {
				var runs []result.CompareRun
				for k, run := range cell.Runs {
					p := result.ComparePair{Row: ri, Fault: cell.Fault, Run: k}
					if slices.Contains(part.Shard.Pairs, p) {
						run.Dir = "../../whole/" + run.Dir // the shards sit in shard/<i>/
						runs = append(runs, run)
						part.Shard.Held = append(part.Shard.Held, p)
					}
				}
				if cell.NotApplicable == "" {
					cell = AggregateCell(cell.Fault, runs)
				}
				row.Cells = append(row.Cells, cell)
			}
			part.Rows = append(part.Rows, row)
		}
		d := filepath.Join(root, "shard", string(rune('0'+i)))
		if err := result.WriteComparison(d, &part); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	merged, err := Merge(dirs, filepath.Join(root, "merged"))
	if err != nil {
		t.Fatal(err)
	}
	if MergeExitCode(merged) != 0 || len(merged.Missing) != 0 || len(merged.Sources) != 3 {
		t.Fatalf("exit %d, missing %v, sources %v", MergeExitCode(merged), merged.Missing, merged.Sources)
	}
	for ri, r := range merged.Rows {
		for ci := range r.Cells {
			got, want := r.Cells[ci], whole.Rows[ri].Cells[ci]
			for k := range got.Runs {
				// Links are relative to the merged page in merged/.
				if !strings.HasPrefix(got.Runs[k].Dir, "../whole/") {
					t.Errorf("run link %q, want ../whole/...", got.Runs[k].Dir)
				}
				got.Runs[k].Dir = strings.TrimPrefix(got.Runs[k].Dir, "../whole/")
			}
			if !cellsEqual(got, want) {
				t.Errorf("%s × %s:\nmerged %+v\nwhole  %+v", whole.Rows[ri].Backend, got.Fault, got, want)
			}
		}
	}
}

// cellsEqual compares two cells number for number, their runs' wall
// times aside.
func eqx(x, y *models.ExposureCounts) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }

func cellsEqual(a, b result.CompareCell) bool {
	eqf := func(x, y *float64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	if a.Fault != b.Fault || a.NotApplicable != b.NotApplicable || !maps.Equal(a.Verdicts, b.Verdicts) ||
		!eqf(a.MedianFirstViolationS, b.MedianFirstViolationS) || a.AcquiresPerS != b.AcquiresPerS ||
		!eqf(a.AcquireOKShare, b.AcquireOKShare) || !eqf(a.MedianLostShare, b.MedianLostShare) ||
		!slices.Equal(a.LostShareRange, b.LostShareRange) || len(a.Runs) != len(b.Runs) || a.Missing != b.Missing ||
		!eqx(a.Exposures, b.Exposures) || a.ExposureRuns != b.ExposureRuns || (a.AdmittedBound == nil) != (b.AdmittedBound == nil) ||
		(a.AdmittedBound != nil && *a.AdmittedBound != *b.AdmittedBound) {
		return false
	}
	for i := range a.Runs {
		x, y := a.Runs[i], b.Runs[i]
		if x.Dir != y.Dir || x.Seed != y.Seed || x.Verdict != y.Verdict || x.Error != y.Error || !eqf(x.FirstViolationS, y.FirstViolationS) ||
			x.AcquireOK != y.AcquireOK || x.AcquireFail != y.AcquireFail || x.AcquireInfo != y.AcquireInfo || x.TimeLimitS != y.TimeLimitS ||
			!eqf(x.LostShareMin, y.LostShareMin) || !eqf(x.LostShareMax, y.LostShareMax) || !eqx(x.Exposures, y.Exposures) {
			return false
		}
	}
	return true
}

// The real thing, as CI would do it: the small memory matrix run on one
// machine and in 3 shards, each shard in its own directory side by side;
// first only two shards come back, then all three. The merge says what
// is missing, then matches the single run cell for cell — verdicts, runs,
// seeds, whether updates were lost — and every link of its page opens a
// report, also after the whole tree is moved.
func TestShardedMemoryComparisonMergesToTheSingleOne(t *testing.T) {
	// Only pause-holder: two real runs of one seed agree on its verdicts
	// (an unfenced run under pause is found invalid or not by timing).
	spec := shardSpec(2 * time.Second)
	spec.Faults = []string{"pause-holder"}
	m, err := Expand(spec)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	single, err := Run(quiet(), m, filepath.Join(root, "single"), nil)
	if err != nil {
		t.Fatal(err)
	}
	art := filepath.Join(root, "artifacts")
	var dirs []string
	for i := 1; i <= 3; i++ {
		d := filepath.Join(art, "fencecheck-shard-"+string(rune('0'+i)))
		c, err := RunShard(quiet(), m, Shard{i, 3}, d, testWriter{t})
		if err != nil {
			t.Fatal(err)
		}
		if ExitCode(c) != 0 || len(c.Shard.Held) != len(c.Shard.Pairs) || !slices.Equal(c.Shard.Pairs, m.ShardPairs(Shard{i, 3})) {
			t.Fatalf("shard %d/3: exit %d, held %v of %v", i, ExitCode(c), c.Shard.Held, c.Shard.Pairs)
		}
		back, err := result.ReadComparison(filepath.Join(d, "compare.json"))
		if err != nil || back.Shard == nil || back.Shard.Matrix != Fingerprint(m.Definition()) || back.Shard.String() != (Shard{i, 3}).String() {
			t.Fatalf("shard %d/3's compare.json: %v %+v", i, err, back)
		}
		dirs = append(dirs, d)
	}
	out := filepath.Join(art, "merged")

	// Shard 3 did not come back.
	partial, err := Merge(dirs[:2], out)
	if err != nil {
		t.Fatal(err)
	}
	lost := m.ShardPairs(Shard{3, 3})
	if MergeExitCode(partial) != ExitMissing || len(partial.Missing) != len(lost) || !slices.Equal(MissingShards(partial), []string{"3/3"}) {
		t.Errorf("without shard 3: exit %d, missing %v (want the %d runs of shard 3/3)", MergeExitCode(partial), partial.Missing, len(lost))
	}
	page, _ := os.ReadFile(filepath.Join(out, "compare.html"))
	md, _ := os.ReadFile(filepath.Join(out, "compare.md"))
	for _, p := range lost {
		r := m.Rows[p.Row]
		line := result.CompareMissing{Shard: "3/3", Backend: r.Backend, Recipe: r.Recipe, Storage: r.Storage, Fencing: r.Fencing, Fault: p.Fault, Run: p.Run + 1}.String()
		if !strings.Contains(string(page), line) || !strings.Contains(string(md), line) {
			t.Errorf("the pages do not name the missing run %q", line)
		}
	}
	if !strings.Contains(string(page), "missing 1/2") {
		t.Errorf("no cell of the page says a run is missing")
	}

	merged, err := Merge(dirs, out)
	if err != nil {
		t.Fatal(err)
	}
	if MergeExitCode(merged) != 0 || len(merged.Missing) != 0 {
		t.Errorf("all shards: exit %d, missing %v", MergeExitCode(merged), merged.Missing)
	}
	if !slices.Equal(merged.Faults, single.Faults) || len(merged.Rows) != len(single.Rows) || merged.Seed != single.Seed ||
		merged.Runs != single.Runs || merged.TimeLimitS != single.TimeLimitS || merged.Clients != single.Clients {
		t.Fatalf("merged header %+v\nsingle %+v", merged, single)
	}
	for ri, r := range merged.Rows {
		s := single.Rows[ri]
		if r.Backend != s.Backend || r.Recipe != s.Recipe || r.Storage != s.Storage || r.Fencing != s.Fencing || r.Cluster != s.Cluster {
			t.Fatalf("row %d: merged %+v, single %+v", ri, r, s)
		}
		for ci, got := range r.Cells {
			want := s.Cells[ci]
			where := s.Backend + " " + s.Fencing + " × " + want.Fault
			if got.VerdictText() != want.VerdictText() || got.NotApplicable != want.NotApplicable || got.Class() != want.Class() {
				t.Errorf("%s: merged %q, single %q", where, got.VerdictText(), want.VerdictText())
			}
			if (got.MedianLostShare == nil) != (want.MedianLostShare == nil) || (got.AcquireOKShare == nil) != (want.AcquireOKShare == nil) {
				t.Errorf("%s: damage counted in one and not the other: merged %+v, single %+v", where, got, want)
			}
			if s.Fencing == "all" && (got.MedianLostShare == nil || *got.MedianLostShare != 0 || *want.MedianLostShare != 0) {
				t.Errorf("%s: fenced cells lose nothing: merged %v, single %v", where, got.MedianLostShare, want.MedianLostShare)
			}
			if s.Fencing == "none" && (got.MedianFirstViolationS == nil || got.MedianLostShare == nil || *got.MedianLostShare <= 0) {
				t.Errorf("%s: the unfenced cell names no violation or damage: %+v", where, got)
			}
			for k := range got.Runs {
				if got.Runs[k].Seed != want.Runs[k].Seed || got.Runs[k].Verdict != want.Runs[k].Verdict {
					t.Errorf("%s run %d: merged seed %d %s, single seed %d %s", where, k+1, got.Runs[k].Seed, got.Runs[k].Verdict, want.Runs[k].Seed, want.Runs[k].Verdict)
				}
			}
			// The same summary code: the cell is its runs' aggregate.
			if again := AggregateCell(got.Fault, got.Runs); !cellsEqual(got, again) {
				t.Errorf("%s: the merged cell is not its runs' summary", where)
			}
			// Its exposures are its runs' pooled, whichever shard ran them,
			// and pause-holder put safety at stake in both.
			var sum models.ExposureCounts
			for _, run := range got.Runs {
				if run.Exposures == nil {
					t.Fatalf("%s: a merged run lost its exposures", where)
				}
				sum.Add(*run.Exposures)
			}
			if got.Exposures == nil || *got.Exposures != sum || !sum.Exercised() || got.AdmittedBound == nil || got.AdmittedBound.Text != sum.BoundText() {
				t.Errorf("%s: merged pool %+v, bound %+v; its runs sum to %+v", where, got.Exposures, got.AdmittedBound, sum)
			}
		}
	}
	links := pageLinks(t, out)
	if len(links) != 4 {
		t.Errorf("%d report links, want 4 (2 runs × 2 cells)", len(links))
	}
	moved := filepath.Join(root, "elsewhere")
	if err := os.Rename(art, moved); err != nil {
		t.Fatal(err)
	}
	pageLinks(t, filepath.Join(moved, "merged"))
}

// pageLinks checks that every link of dir's compare.html opens a file
// and returns them.
func pageLinks(t *testing.T, dir string) []string {
	t.Helper()
	page, err := os.ReadFile(filepath.Join(dir, "compare.html"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, mt := range regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(string(page), -1) {
		if strings.HasPrefix(mt[1], "data:") {
			continue
		}
		u, err := url.Parse(mt[1])
		if err != nil || u.IsAbs() || strings.HasPrefix(u.Path, "/") {
			t.Errorf("link %q is not relative", mt[1])
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(u.Path))); err != nil {
			t.Errorf("link %q does not resolve: %v", mt[1], err)
		}
		out = append(out, mt[1])
	}
	return out
}

// A merged comparison keeps each row's settings and the reason a row's
// other columns are not run; a missing run names its row's settings.
func TestMergeKeepsRowSettings(t *testing.T) {
	root := t.TempDir()
	shard := filepath.Join(root, "s")
	emptyShard(t, Spec{Preset: "power", Backends: []string{"redis", "etcd"}, Runs: 1, Seed: 3}, Shard{1, 1}, shard)
	merged, err := Merge([]string{shard}, filepath.Join(root, "merged"))
	if err != nil {
		t.Fatal(err)
	}
	if len(merged.Rows) != 4 || !slices.Equal(merged.Faults, []string{"power-loss", "power-loss-all"}) {
		t.Fatalf("rows %+v, faults %v", merged.Rows, merged.Faults)
	}
	r := merged.Rows[0]
	if r.Settings != "safe: --redis-persistence aof-always" || r.Options["redis-persistence"] != "aof-always" ||
		!strings.Contains(r.Cells[1].NotApplicable, "redis's durability settings run only under power-loss") || r.Cells[0].NotApplicable != "" {
		t.Errorf("row %+v", r)
	}
	if len(merged.Missing) != 4 || !strings.Contains(merged.Missing[0].String(), "setnx-incr [safe: --redis-persistence aof-always]") {
		t.Errorf("missing %v", merged.Missing)
	}
}
