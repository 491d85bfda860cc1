package reports

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/models"
)

// CompareSchema names the version of compare.json (docs/compare.md).
const CompareSchema = "fencecheck/compare/v1"

// Comparison is a matrix of runs, `check compare`'s result: one row per
// backend/recipe/storage/fencing, one column per fault. It is what
// compare.json holds and what compare.md and compare.html show.
type Comparison struct {
	Schema string `json:"schema"`
	// Started is the UTC wall-clock time the comparison began.
	Started string `json:"started"`
	// Preset is the --preset used, if any.
	Preset string `json:"preset,omitempty"`
	// Seed is the first run's seed; run r of every cell uses Seed+r.
	Seed       int64   `json:"seed"`
	Runs       int     `json:"runs"`
	TimeLimitS float64 `json:"time_limit_s"`
	// Clients, Keys, Nodes and LeaseTTLS are what every run shares.
	Clients   int     `json:"clients,omitempty"`
	Keys      int     `json:"keys,omitempty"`
	Nodes     int     `json:"nodes,omitempty"`
	LeaseTTLS float64 `json:"lease_ttl_s,omitempty"`
	// DurationS is the whole comparison's wall time.
	DurationS float64      `json:"duration_s"`
	Faults    []string     `json:"faults"`
	Rows      []CompareRow `json:"rows"`
	// Errors counts the runs that could not be carried out.
	Errors int `json:"errors"`
	// Interrupted: a signal stopped the comparison; cells not reached
	// have no runs.
	Interrupted bool `json:"interrupted,omitempty"`
	// Shard is set in a shard's partial compare.json (check compare
	// --shard); Sources and Missing in a merged one (check compare merge):
	// the shards it was made from and the runs none of them brought back.
	Shard   *CompareShard    `json:"shard,omitempty"`
	Sources []CompareSource  `json:"sources,omitempty"`
	Missing []CompareMissing `json:"missing,omitempty"`
	// Unfinished, in a merged comparison, are the runs a shard called
	// valid whose history does not show that they finished (no end event:
	// docs/history.md), each with why; the merge counts them as unknown.
	Unfinished []string `json:"unfinished,omitempty"`
}

// CompareRow is one backend/recipe/storage/fencing combination.
type CompareRow struct {
	Backend string `json:"backend"`
	Recipe  string `json:"recipe"`
	Storage string `json:"storage"`
	Fencing string `json:"fencing"`
	Cluster string `json:"cluster"`
	// Cells are in the order of Comparison.Faults.
	Cells []CompareCell `json:"cells"`
}

// CompareCell is one row under one fault: its runs and their summary.
type CompareCell struct {
	Fault string `json:"fault"`
	// NotApplicable says why the cell was not run (e.g. a fault an
	// in-process run cannot inject); the cell is then empty.
	NotApplicable string `json:"not_applicable,omitempty"`
	// Verdicts counts the runs by verdict: valid, invalid, unknown, and
	// error for a run that could not be carried out.
	Verdicts map[string]int `json:"verdicts"`
	// MedianFirstViolationS is the median, over the runs that found a
	// violation, of when the first culprit op completed (seconds into the
	// workload); null when no run found one.
	MedianFirstViolationS *float64 `json:"median_first_violation_s"`
	// AcquiresPerS is ok acquires / time limit, averaged over the runs
	// that recorded any op.
	AcquiresPerS float64 `json:"acquires_per_s"`
	// AcquireOKShare is ok / (ok + fail + info) of every acquire of the
	// cell's runs; null when there was none.
	AcquireOKShare *float64 `json:"acquire_ok_share"`
	// MedianLostShare is the median, over the runs whose lost updates
	// could be counted, of each run's share of acknowledged updates lost
	// (its lower bound: exact when no write's outcome was unknown);
	// LostShareRange is [the smallest lower bound, the largest upper
	// bound] over those runs. Null when no run could be counted.
	MedianLostShare *float64     `json:"median_lost_share"`
	LostShareRange  []float64    `json:"lost_share_range,omitempty"`
	Runs            []CompareRun `json:"runs"`
	// Missing counts the cell's runs a merged comparison lacks (a shard
	// that did not come back); the verdicts are of the runs it has.
	Missing int `json:"missing,omitempty"`
}

// CompareRun is one run of a cell.
type CompareRun struct {
	// Dir is the run's directory relative to the comparison's (slashes);
	// empty when the run did not get as far as making one.
	Dir  string `json:"dir,omitempty"`
	Seed int64  `json:"seed"`
	// Verdict is valid, invalid, unknown or error.
	Verdict string `json:"verdict"`
	Error   string `json:"error,omitempty"`
	// FirstViolationS is when the first culprit op completed, seconds into
	// the workload; null when the run found no violation.
	FirstViolationS *float64 `json:"first_violation_s"`
	AcquireOK       int      `json:"acquire_ok"`
	AcquireFail     int      `json:"acquire_fail"`
	AcquireInfo     int      `json:"acquire_info"`
	TimeLimitS      float64  `json:"time_limit_s"`
	// DurationS is the run's wall time, setup and check included.
	DurationS float64 `json:"duration_s"`
	// LostShareMin and LostShareMax bound the share of acknowledged
	// updates the run lost (results.json's damage); null when they could
	// not be counted.
	LostShareMin *float64 `json:"lost_share_min"`
	LostShareMax *float64 `json:"lost_share_max"`
	// Servers is what the run's servers said they are (results.json's
	// servers.summary, e.g. "etcd 3.6.16"); omitted when the run did not
	// ask them.
	Servers string `json:"servers,omitempty"`
}

// ServersText is what the row's servers said they are, over every run
// of every cell: each distinct answer once, in the order first seen ("etcd
// 3.6.16"); "" when no run asked.
func (r *CompareRow) ServersText() string {
	var seen []string
	for _, c := range r.Cells {
		for _, run := range c.Runs {
			if run.Servers != "" && !slices.Contains(seen, run.Servers) {
				seen = append(seen, run.Servers)
			}
		}
	}
	return strings.Join(seen, " / ")
}

// The verdict words of a cell, in the order a cell lists them.
var compareVerdicts = []string{"invalid", "valid", "unknown", "error"}

// VerdictText is the cell's verdicts, e.g. "invalid 5/5" or
// "invalid 3/5, valid 2/5"; "n/a" for a cell not run, "not run" for one a
// signal kept from running.
func (c *CompareCell) VerdictText() string {
	if c.NotApplicable != "" {
		return "n/a"
	}
	n := len(c.Runs)
	var parts []string
	if n == 0 && c.Missing == 0 {
		return "not run"
	}
	for _, v := range compareVerdicts {
		if k := c.Verdicts[v]; k > 0 {
			parts = append(parts, fmt.Sprintf("%s %d/%d", v, k, n+c.Missing))
		}
	}
	if c.Missing > 0 {
		parts = append(parts, fmt.Sprintf("missing %d/%d", c.Missing, n+c.Missing))
	}
	return strings.Join(parts, ", ")
}

// StatsText is the cell's numbers: median time to first violation,
// acquisitions per second and the share of acquisitions that succeeded.
func (c *CompareCell) StatsText() string {
	if c.NotApplicable != "" || len(c.Runs) == 0 {
		return ""
	}
	first := "first —"
	if c.MedianFirstViolationS != nil {
		first = fmt.Sprintf("first %.1f s", *c.MedianFirstViolationS)
	}
	share := "— ok"
	if c.AcquireOKShare != nil {
		share = fmt.Sprintf("%.0f%% ok", 100**c.AcquireOKShare)
	}
	if lost := c.LostText(); lost != "" {
		first += " · " + lost
	}
	return fmt.Sprintf("%s · %.1f acq/s · %s", first, c.AcquiresPerS, share)
}

// LostText is the cell's lost-update share, e.g. "lost 2.1%" or, over
// several runs or with writes of unknown outcome, "lost 2.1% (0.4–5%)";
// "" when no run's lost updates could be counted.
func (c *CompareCell) LostText() string {
	if c.MedianLostShare == nil {
		return ""
	}
	s := "lost " + models.ShareText(*c.MedianLostShare, *c.MedianLostShare)
	if len(c.LostShareRange) == 2 && c.LostShareRange[0] != c.LostShareRange[1] {
		s += " (" + models.ShareText(c.LostShareRange[0], c.LostShareRange[1]) + ")"
	}
	return s
}

// Class is the cell's colour: valid or invalid when every run agrees,
// error when a run failed, unknown otherwise (also when runs of a merged
// comparison are missing).
func (c *CompareCell) Class() string {
	n := len(c.Runs)
	switch {
	case c.NotApplicable != "" || n == 0:
		return "na"
	case c.Verdicts["error"] > 0:
		return "error"
	case c.Missing > 0:
		return "unknown" // not every run came back
	case c.Verdicts["invalid"] == n:
		return "invalid"
	case c.Verdicts["valid"] == n:
		return "valid"
	}
	return "unknown"
}

// reportLink is the relative link to a run's report.html, each segment
// escaped.
func reportLink(dir string) string {
	var parts []string
	for _, p := range strings.Split(dir, "/") {
		parts = append(parts, url.PathEscape(p))
	}
	return strings.Join(parts, "/") + "/report.html"
}

// WriteCompareMarkdown writes compare.md: the matrix as a Markdown table.
func WriteCompareMarkdown(w io.Writer, c *Comparison) error {
	var b strings.Builder
	b.WriteString("# fencecheck compare\n\n")
	fmt.Fprintf(&b, "Started %s", c.Started)
	if c.Preset != "" {
		fmt.Fprintf(&b, ", preset %s", c.Preset)
	}
	fmt.Fprintf(&b, "; %s per cell of %s each", words.Plural(c.Runs, "run"), fmtSeconds(c.TimeLimitS))
	if c.Clients > 0 {
		fmt.Fprintf(&b, ", %s", c.Shared())
	}
	fmt.Fprintf(&b, "; seed %d (run r of every cell uses seed+r); took %.0f s.", c.Seed, c.DurationS)
	if c.Errors > 0 {
		fmt.Fprintf(&b, " **%s could not be carried out.**", words.Plural(c.Errors, "run"))
	}
	if c.Interrupted {
		b.WriteString(" **Interrupted: cells marked \"not run\" were not reached.**")
	}
	if note := c.ShardNote(); note != "" {
		b.WriteString("\n\n" + note)
	}
	if len(c.Missing) > 0 {
		fmt.Fprintf(&b, "\n\n**%d run(s) missing: no shard brought them back** (the cells say \"missing\"):\n\n", len(c.Missing))
		for _, m := range c.Missing {
			b.WriteString("- " + m.String() + "\n")
		}
	}
	if len(c.Unfinished) > 0 {
		fmt.Fprintf(&b, "\n\n**%d run(s) not shown to have finished: counted as unknown:**\n\n", len(c.Unfinished))
		for _, u := range c.Unfinished {
			b.WriteString("- " + u + "\n")
		}
	}
	b.WriteString("\n\nEach cell: the verdicts; the median time to the first violation (when the first culprit op completed); " +
		"the share of acknowledged updates lost (the median over the runs whose final read could be taken, and the range over them, when it differs); " +
		"acquisitions per second (ok acquires / time limit); the share of acquisitions that succeeded; links to each run's report. " +
		"Under each backend, what its servers said they are when asked after the last fault of each run.\n\n")
	b.WriteString("| backend | recipe | storage | fencing |")
	for _, f := range c.Faults {
		fmt.Fprintf(&b, " %s |", f)
	}
	b.WriteString("\n|---|---|---|---|")
	for range c.Faults {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	var errs []string
	for _, r := range c.Rows {
		backend := r.Backend
		if sv := r.ServersText(); sv != "" {
			backend += "<br>" + mdLine(sv)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |", backend, r.Recipe, r.Storage, r.Fencing)
		for _, cell := range r.Cells {
			b.WriteString(" ")
			b.WriteString(cell.VerdictText())
			if s := cell.StatsText(); s != "" {
				b.WriteString("<br>" + s)
			}
			var links []string
			for i, run := range cell.Runs {
				if run.Dir != "" {
					links = append(links, fmt.Sprintf("[%d](%s)", runNo(c, i, run), reportLink(run.Dir)))
				}
				if run.Error != "" {
					errs = append(errs, fmt.Sprintf("- %s %s %s %s × %s, run %d: %s", r.Backend, r.Recipe, r.Storage, r.Fencing, cell.Fault, runNo(c, i, run), mdLine(run.Error)))
				}
			}
			if len(links) > 0 {
				b.WriteString("<br>" + strings.Join(links, " "))
			}
			b.WriteString(" |")
		}
		b.WriteString("\n")
	}
	var na []string
	for _, r := range c.Rows {
		for _, cell := range r.Cells {
			if cell.NotApplicable != "" && !slices.Contains(na, cell.NotApplicable) {
				na = append(na, cell.NotApplicable)
			}
		}
	}
	for _, why := range na {
		fmt.Fprintf(&b, "\nn/a: %s.\n", why)
	}
	if len(errs) > 0 {
		b.WriteString("\n## Runs that could not be carried out\n\n")
		b.WriteString(strings.Join(errs, "\n"))
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func fmtSeconds(s float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", s), "0"), ".") + " s"
}

// runNo is the number, from 1, of the i-th run of a cell: run r of every
// cell has the comparison's seed + r, so a merged cell missing its first
// run still calls its second "run 2"; a seed outside the cell's runs
// falls back to the position.
func runNo(c *Comparison, i int, run CompareRun) int64 {
	if n := run.Seed - c.Seed + 1; n >= 1 && n <= int64(c.Runs) {
		return n
	}
	return int64(i + 1)
}

//go:embed compare.html.tmpl
var compareTemplate string

var compareTmpl = template.Must(template.New("compare").Funcs(template.FuncMap{
	"link":    reportLink,
	"seconds": fmtSeconds,
	"runNo":   runNo,
}).Parse(compareTemplate))

// WriteCompareHTML writes compare.html.
func WriteCompareHTML(w io.Writer, c *Comparison) error {
	return compareTmpl.Execute(w, c)
}

// WriteComparison writes compare.json, compare.md and compare.html into
// dir.
func WriteComparison(dir string, c *Comparison) error {
	c.Schema = CompareSchema
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := []struct {
		name string
		fill func(io.Writer) error
	}{
		{"compare.json", func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(c)
		}},
		{"compare.md", func(w io.Writer) error { return WriteCompareMarkdown(w, c) }},
		{"compare.html", func(w io.Writer) error { return WriteCompareHTML(w, c) }},
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, f.name), func(o *os.File) error { return f.fill(o) }); err != nil {
			return err
		}
	}
	return nil
}

// Shared says what every run of the comparison had in common: "5 clients,
// 1 key, 3 nodes, lease 2 s".
func (c *Comparison) Shared() string {
	return fmt.Sprintf("%d %s, %d %s, %d %s, lease %s", c.Clients, plural(c.Clients, "client", "clients"),
		c.Keys, plural(c.Keys, "key", "keys"), c.Nodes, plural(c.Nodes, "node", "nodes"), fmtSeconds(c.LeaseTTLS))
}
