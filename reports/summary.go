package reports

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/models"
)

// Summary prints the one-screen summary of a run.
func Summary(w io.Writer, r *Run) {
	st := ComputeStats(r.Ops)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%s  (%s, %d events)\n", r.Name, r.Duration.Round(1e6), len(r.Events))
	var fs []string
	for f := range st.Ops {
		fs = append(fs, f)
	}
	sort.Strings(fs)
	for _, f := range fs {
		m := st.Ops[f]
		fmt.Fprintf(w, "  %-8s ok %6d  fail %6d  info %4d\n", f, m["ok"], m["fail"], m["info"])
	}
	fmt.Fprintf(w, "  stale tokens fenced %d, leases known lost %d, two holders at once %d times, acquire p50 %.1f ms p99 %.1f ms\n",
		st.Fenced, st.LeasesLost, st.Overlaps, st.AcquireMillis.P50, st.AcquireMillis.P99)
	for _, k := range r.Result.Keys {
		fmt.Fprintf(w, "  key %-6s %-8s (%d ops, %d ms)\n", k.Key, k.Verdict, k.Ops, k.CheckMillis)
	}
	if r.Interrupted {
		fmt.Fprintln(w, "  the run was interrupted by a signal: the history ends where it stopped")
	}
	if r.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", r.Error)
	}
	if r.HistoryNote != "" {
		fmt.Fprintf(w, "  history.jsonl: %s\n", r.HistoryNote)
	}
	fmt.Fprintln(w)
	switch r.Result.Verdict {
	case models.Valid:
		fmt.Fprintln(w, "VALID: every key's history is consistent with correctly fenced storage.")
	case models.Invalid:
		fmt.Fprintln(w, "INVALID: "+r.Result.Explanation)
	default:
		fmt.Fprintln(w, "UNKNOWN: "+r.Result.Explanation)
	}
	fmt.Fprintf(w, "report: %s\n", filepath.Join(r.Dir, "report.html"))
	if strings.TrimSpace(r.Command) != "" {
		fmt.Fprintf(w, "rerun:  %s\n", r.Command)
	}
}
