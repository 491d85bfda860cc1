package reports

import (
	"fmt"
	"os"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/runstore"
)

// StepSummaryEnv is the variable GitHub Actions sets to the file a step
// appends its Markdown summary to.
const StepSummaryEnv = "GITHUB_STEP_SUMMARY"

// maxSummarySteps bounds the story told in a step summary.
const maxSummarySteps = 30

// WriteStepSummary appends a Markdown summary of the run to path — in
// GitHub Actions, os.Getenv(StepSummaryEnv) — and does nothing when path
// is empty. The summary has the verdict, the explanation, a table of the
// keys, the story of each invalid key, the counts and the rerun command.
// Everything from a client or a server is escaped so that it shows as
// text.
func WriteStepSummary(path string, r *Run) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(StepSummary(r)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// StepSummary is the Markdown WriteStepSummary appends.
func StepSummary(r *Run) string {
	var b strings.Builder
	icon := map[models.Verdict]string{models.Valid: "✅", models.Invalid: "❌"}[r.Result.Verdict]
	if icon == "" {
		icon = "⚠️"
	}
	x := r.Result.Exposures
	verdict := strings.ToUpper(string(r.Result.Verdict))
	if r.Result.Verdict == models.Valid && x != nil && !x.Exercised() {
		icon, verdict = "⚠️", "VALID, but not exercised"
	}
	fmt.Fprintf(&b, "### %s fencecheck %s: %s\n\n", icon, md(r.Name), verdict)
	if h := Headline(r.Result); h != "" {
		fmt.Fprintf(&b, "%s\n\n", md(h+AdmittedText(onlyIf(r.Result.Verdict == models.Invalid, x))))
	}
	if r.Result.Verdict == models.Valid && x != nil {
		if x.Exercised() {
			fmt.Fprintf(&b, "%s.\n\n", md(capitalize(x.Text())))
		} else {
			fmt.Fprintf(&b, "%s.\n\n", md(capitalize(NotExercisedText(x))))
		}
	}
	if x != nil {
		if bound := x.BoundText(); bound != "" {
			fmt.Fprintf(&b, "Exposures: %s; %s.\n\n", md(x.Short()), md(bound))
		}
	}
	if c := models.CountContradictions(r.Ops, r.Faults); c.Contradicted > 0 {
		text := c.Text()
		if x != nil && x.RefusedWentBack > 0 {
			text += "; " + x.WentBackText()
		}
		fmt.Fprintf(&b, "Contradicted grants: %s.\n\n", md(text))
	}
	if a := r.Result.Agreement; a != nil {
		fmt.Fprintf(&b, "At the end: %s.\n\n", md(a.Short()))
	}
	if r.Error != "" {
		fmt.Fprintf(&b, "The run did not complete: %s\n\n", md(r.Error))
	}
	if r.Interrupted {
		b.WriteString("The run was interrupted by a signal: the history ends where it stopped.\n\n")
	}
	if r.NotFinished() != "" && r.Result.Verdict != models.Unknown {
		// Unknown says it in the explanation already.
		fmt.Fprintf(&b, "The run did not finish: %s.\n\n", md(r.NotFinished()))
	}
	if len(r.Result.Keys) > 0 {
		b.WriteString("| key | verdict | ops | explanation |\n|---|---|---:|---|\n")
		var valid []models.KeyResult
		for _, i := range failingFirst(r.Result.Keys) {
			k := r.Result.Keys[i]
			if len(r.Result.Keys) > maxListedKeys && k.Verdict == models.Valid {
				valid = append(valid, k)
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %d | %s |\n", md(k.Key), md(string(k.Verdict)), k.Ops, md(k.Explanation))
		}
		if len(valid) > 0 {
			fmt.Fprintf(&b, "| %d other %s | valid | %s | |\n", len(valid), plural(len(valid), "key", "keys"), md(opsRange(valid)))
		}
		b.WriteString("\n")
	}
	told := 0
	for _, i := range naturalOrder(r.Result.Keys) {
		k := &r.Result.Keys[i]
		if k.Verdict != models.Invalid {
			continue
		}
		if told == maxStories {
			b.WriteString("Further invalid keys are told in report.html.\n\n")
			break
		}
		told++
		steps := Story(r, k)
		if len(steps) == 0 {
			continue
		}
		fmt.Fprintf(&b, "<details><summary>What happened on %s</summary>\n\n", md(k.Key))
		for j, s := range steps {
			if j == maxSummarySteps {
				fmt.Fprintf(&b, "1. … %d more steps in report.html\n", len(steps)-j)
				break
			}
			fmt.Fprintf(&b, "1. `%s` %s\n", history.Seconds(s.Time), md(s.Text))
		}
		b.WriteString("\n</details>\n\n")
	}
	st := ComputeStats(r.Ops)
	fmt.Fprintf(&b, "%d events; stale tokens fenced %d; leases lost %d; two holders at once %s; acquire p50 %.1f ms, p99 %.1f ms.\n\n",
		len(r.Events), st.Fenced, st.LeasesLost, words.Plural(st.Overlaps, "time"), st.AcquireMillis.P50, st.AcquireMillis.P99)
	if r.Command != "" {
		fence := strings.Repeat("`", max(3, longestRun(r.Command, '`')+1))
		fmt.Fprintf(&b, "Rerun:\n\n%ssh\n%s\n%s\n\n", fence, oneLine(clean(r.Command)), fence)
	}
	if r.Dir != "" {
		fmt.Fprintf(&b, "Report: %s (in the store directory)\n\n", md(runstore.Run(r.Dir).Report()))
	}
	return b.String()
}

// onlyIf is x when cond holds, else nil.
func onlyIf(cond bool, x *models.Exposures) *models.Exposures {
	if cond {
		return x
	}
	return nil
}

// md escapes text for Markdown (and the HTML GitHub allows in it) so it
// renders as itself, on one line, table cells included.
func md(s string) string {
	s = oneLine(clean(s))
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '"':
			b.WriteString("&quot;")
		case '\\', '`', '*', '_', '[', ']', '(', ')', '#', '|', '!', '~', '{', '}':
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func oneLine(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ", "\t", " ").Replace(s)
}

func longestRun(s string, c byte) int {
	best, cur := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			cur++
			best = max(best, cur)
		} else {
			cur = 0
		}
	}
	return best
}
