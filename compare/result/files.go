package result

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/runstore"
)

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
	fmt.Fprintf(&b, "; %s per cell of %s each", words.Plural(c.Runs, "run"), Seconds(c.TimeLimitS))
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
	if c.Published != "" {
		b.WriteString("\n\nPublished: " + c.Published + ".")
	}
	if note := c.ShardNote(); note != "" {
		b.WriteString("\n\n" + note)
	}
	if len(c.Missing) > 0 {
		fmt.Fprintf(&b, "\n\n**%s missing: no shard brought them back** (the cells say \"missing\"):\n\n", words.Plural(len(c.Missing), "run"))
		for _, m := range c.Missing {
			b.WriteString("- " + m.String() + "\n")
		}
	}
	if len(c.Unfinished) > 0 {
		fmt.Fprintf(&b, "\n\n**%s not shown to have finished: counted as unknown:**\n\n", words.Plural(len(c.Unfinished), "run"))
		for _, u := range c.Unfinished {
			b.WriteString("- " + u + "\n")
		}
	}
	b.WriteString("\n\nEach cell: the verdicts; the exposures pooled over its runs (moments a superseded holder's late op met the storage) and what they bound: with none admitted, the one-sided 95 % upper bound on the chance that an exposure is admitted, else the rate and its 95 % interval (exact, Clopper–Pearson; per exposure under this fault and schedule, not per hour in production); the median time to the first violation (when the first culprit op completed); " +
		"the share of acknowledged updates lost (the median over the runs whose final read could be taken, and the range over them, when it differs); " +
		"acquisitions per second (ok acquires / time limit); the share of acquisitions that succeeded; links to each run's report. " +
		"Under each backend, what its servers said they are when asked after the last fault of each run.\n\n")
	settings := c.HasSettings()
	b.WriteString("| backend | recipe |")
	if settings {
		b.WriteString(" settings |")
	}
	b.WriteString(" storage | fencing |")
	for _, f := range c.Faults {
		fmt.Fprintf(&b, " %s |", f)
	}
	b.WriteString("\n|---|---|")
	if settings {
		b.WriteString("---|")
	}
	b.WriteString("---|---|")
	for range c.Faults {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	var errs []string
	for _, r := range c.Rows {
		backend := r.BackendLabel()
		if sv := r.ServersText(); sv != "" {
			backend += "<br>" + mdLine(sv)
		}
		fmt.Fprintf(&b, "| %s | %s |", backend, r.Recipe)
		if settings {
			fmt.Fprintf(&b, " %s |", r.Settings)
		}
		fmt.Fprintf(&b, " %s | %s |", r.Storage, r.Fencing)
		for _, cell := range r.Cells {
			b.WriteString(" ")
			b.WriteString(cell.VerdictText())
			if s := cell.ExposureText(); s != "" {
				b.WriteString("<br>" + s)
			}
			if s := cell.StatsText(); s != "" {
				b.WriteString("<br>" + s)
			}
			var links []string
			for i, run := range cell.Runs {
				if run.Dir != "" {
					links = append(links, fmt.Sprintf("[%d](%s)", runNo(c, i, run), reportLink(run.Dir)))
				}
				if run.Error != "" {
					errs = append(errs, fmt.Sprintf("- %s %s %s %s × %s, run %d: %s", r.BackendLabel(), r.RecipeWithSettings(), r.Storage, r.Fencing, cell.Fault, runNo(c, i, run), mdLine(run.Error)))
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
	"seconds": Seconds,
	"plural":  words.Plural,
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
		path string
		fill func(io.Writer) error
	}{
		{runstore.Comparison(dir).JSON(), func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(c)
		}},
		{runstore.Comparison(dir).Markdown(), func(w io.Writer) error { return WriteCompareMarkdown(w, c) }},
		{runstore.Comparison(dir).HTML(), func(w io.Writer) error { return WriteCompareHTML(w, c) }},
	}
	for _, f := range files {
		if err := runstore.WriteFile(f.path, func(o *os.File) error { return f.fill(o) }); err != nil {
			return err
		}
	}
	return nil
}
