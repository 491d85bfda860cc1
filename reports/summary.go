package reports

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/runstore"
)

// SummaryBeside prints the summary of a run and, after it, each output
// that could not be written (WriteOutputs): the verdict above them stands.
func SummaryBeside(w io.Writer, r *Run, unwritten []string) {
	Summary(w, r)
	for _, u := range unwritten {
		fmt.Fprintf(w, "also: %s (the verdict above stands)\n", u)
	}
}

// Summary prints the one-screen summary of a run.
func Summary(w io.Writer, r *Run) {
	st := ComputeStats(r.Ops)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s  (%s, %d events)\n", r.Name, r.Duration.Round(1e6), len(r.Events))
	if r.Servers != nil {
		fmt.Fprintf(w, "  servers: %s\n", r.Servers.Summary)
	}
	if g := r.ExpiredGrants; g != nil && g.Counted {
		fmt.Fprintf(w, "  lock granted on an already expired lease: %d of %d grants\n", g.Count, g.Grants)
	}
	var fs []string
	for f := range st.Ops {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	for _, f := range fs {
		m := st.Ops[f]
		fmt.Fprintf(w, "  %-8s ok %6d  fail %6d  info %4d\n", f, m["ok"], m["fail"], m["info"])
	}
	fmt.Fprintf(w, "  stale tokens fenced %d, leases known lost %d, two holders at once %s, acquire p50 %.1f ms p99 %.1f ms\n",
		st.Fenced, st.LeasesLost, words.Plural(st.Overlaps, "time"), st.AcquireMillis.P50, st.AcquireMillis.P99)
	dmg := models.ComputeDamage(r.Ops)
	fmt.Fprintf(w, "  damage: %s\n", dmg.Text())
	if x := r.Result.Exposures; x != nil {
		fmt.Fprintf(w, "  exposures: %s\n", ExposureLine(x))
	}
	grants := models.CountContradictions(r.Ops, r.Faults).Text()
	if x := r.Result.Exposures; x != nil && x.RefusedWentBack > 0 {
		grants += "; " + x.WentBackText()
	}
	fmt.Fprintf(w, "  grants: %s\n", grants)
	if a := r.Result.Agreement; a != nil {
		fmt.Fprintf(w, "  at the end: %s\n", a.Short())
	}
	if t := FailedOpensText(r.Ops); t != "" {
		fmt.Fprintf(w, "  opens: %s\n", t)
	}
	if p := r.Result.PowerCuts; p != nil {
		fmt.Fprintf(w, "  power cuts: %s\n", p.Text())
	}
	if c := r.Result.Crashes; c != nil {
		fmt.Fprintf(w, "  crashes: %s\n", c.Text())
	}
	if why := EndedByText(r.EndedBy); why != "" {
		fmt.Fprintf(w, "  %s\n", why)
	}
	KeyLines(w, "  ", r.Result.Keys)
	if r.Interrupted {
		fmt.Fprintln(w, "  the run was interrupted by a signal: the history ends where it stopped")
	}
	if r.Incomplete != "" {
		fmt.Fprintf(w, "  incomplete: %s\n", r.Incomplete)
	}
	if r.Unfinished != "" {
		fmt.Fprintf(w, "  unfinished: %s\n", r.Unfinished)
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	if r.HistoryNote != "" {
		fmt.Fprintf(w, "  history.jsonl: %s\n", r.HistoryNote)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, VerdictLine(r.Result))
	fmt.Fprintf(w, "report: %s\n", runstore.Run(r.Dir).Report())
	if strings.TrimSpace(r.Command) != "" {
		fmt.Fprintf(w, "rerun:  %s\n", r.Command)
	}
}

// VerdictLine is the sentence a check ends with, the same for a run,
// `check report` and `check analyze`: VALID, INVALID or UNKNOWN and why.
func VerdictLine(res models.Result) string {
	switch res.Verdict {
	case models.Valid:
		return validLine(res.Exposures) + powerCutsText(res.PowerCuts)
	case models.Invalid:
		return "INVALID: " + Headline(res) + AdmittedText(res.Exposures)
	}
	return "UNKNOWN: " + Headline(res)
}

// validLine is a valid verdict's sentence, from its exposures.
func validLine(x *models.Exposures) string {
	switch {
	case x == nil:
		return "VALID: every key's history is consistent with correctly fenced storage."
	case x.Exercised():
		return "VALID: " + x.Text() + "."
	}
	return "VALID, but not exercised: " + NotExercisedText(x) + "."
}

// powerCutsText is what a valid verdict adds about its power cuts: " Power
// cuts: 3 power cuts, 57 post-cut grants; …"; "" without.
func powerCutsText(p *models.PowerCuts) string {
	if p == nil {
		return ""
	}
	return " Power cuts: " + p.Text() + "."
}

// EndedByText says what ended the workload when it was not its time
// limit alone: "the workload ended once enough exposures were seen
// (--exposures)"; "" otherwise.
func EndedByText(endedBy string) string {
	switch endedBy {
	case "exposures":
		return "the workload ended once the exposures asked for were seen (--exposures), before its time limit"
	case "violation":
		return "the workload ended at the first violation (--stop-on-violation)"
	}
	return ""
}

// NotExercisedText says why a valid run proves little: no holder
// outlived its lease, and the likely reason when one is known.
func NotExercisedText(x *models.Exposures) string {
	s := models.NotExercised
	if x != nil && x.Reason != "" {
		s += " (" + x.Reason + ")"
	}
	return s
}

// AdmittedText is what an invalid verdict adds about its exposures: " (2
// of 3 exposures admitted)"; "" when they were not counted.
func AdmittedText(x *models.Exposures) string {
	switch {
	case x == nil:
		return ""
	case x.Exposures == 0:
		return " (no exposure: no superseded holder's late op met the storage; the violation is of another kind)"
	}
	return fmt.Sprintf(" (%d of %s admitted)", x.Admitted, words.Plural(x.Exposures, "exposure"))
}

// ExposureLine is the summary's line on the exposures: their outcomes,
// the holders outlived without a late op, and the bound on admission.
func ExposureLine(x *models.Exposures) string {
	s := x.Short()
	if x.Harmless > 0 || x.OutlivedIdle > 0 {
		s += fmt.Sprintf(" (aside: %d harmless, %d outlived idle)", x.Harmless, x.OutlivedIdle)
	}
	if b := x.BoundText(); b != "" {
		s += "; " + b
	}
	if x.RefusedWentBack > 0 {
		s += fmt.Sprintf(" (the bound counts exposures only, not the %s refused for a token that went back: see grants)", words.Plural(x.RefusedWentBack, "holder"))
	}
	return s
}

// maxListedKeys: with more keys than this, the summary lists only the keys
// that failed and sums the valid ones up in one line.
const maxListedKeys = 10

// KeyLines prints a line per key, each starting with indent, failing keys
// first and each group in natural order; with more than ten keys, a line
// per failing key and one for all the valid ones.
func KeyLines(w io.Writer, indent string, keys []models.KeyResult) {
	var valid []models.KeyResult
	for _, i := range failingFirst(keys) {
		k := keys[i]
		if len(keys) > maxListedKeys && k.Verdict == models.Valid {
			valid = append(valid, k)
			continue
		}
		fmt.Fprintf(w, "%skey %-6s %-8s (%d ops placed, %d ms)\n", indent, k.Key, k.Verdict, k.Ops, k.CheckMillis)
	}
	if len(valid) > 0 {
		fmt.Fprintf(w, "%s%d %s valid (%s)\n", indent, len(valid), plural(len(valid), "key", "keys"), strings.Replace(opsRange(valid), " each", " placed each", 1))
	}
}
