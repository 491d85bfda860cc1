package compare

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/compare/result"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/runstore"
)

// A CI user pins a matrix with --expect FILE: each cell's expected
// verdict, one line each, in the words compare's tables name the cell
// with:
//
//	# row × fault: verdict
//	etcd mutex fenced none × pause-holder: invalid
//	etcd mutex fenced all × pause-holder: valid
//
// The row is as the tables print it (backend, its build when a row asks
// for one, recipe, storage, fencing, then the row's settings in
// brackets); "x" may stand for "×". The verdicts a cell can be held to
// are ExpectedVerdicts. compare writes its own cells this way
// (ExpectFile) so a pin can start from a run. Every cell named must be
// in the matrix, checked before anything runs; cells not named are not
// judged.

// ExpectedVerdicts are what a cell can be expected to be: every run
// valid, every run invalid, every run unknown, no run valid (a broken
// release that is invalid in some runs and unknown in others), or not
// run at all (n/a).
var ExpectedVerdicts = []string{"valid", "invalid", "unknown", "not-valid", "n/a"}

// Expectation is one line of an --expect file.
type Expectation struct {
	Row, Fault, Verdict string
	Line                int
}

// Cell is the cell's name as an --expect line gives it.
func (e Expectation) Cell() string { return e.Row + " × " + e.Fault }

// ReadExpectations reads and parses an --expect file: a usage error
// (exit 254) naming the line when it cannot.
func ReadExpectations(path string) ([]Expectation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usage.Errorf("expect", "%v (give a file of lines ROW × FAULT: VERDICT, docs/compare.md)", err)
	}
	defer f.Close()
	return ParseExpectations(path, f)
}

// ParseExpectations parses the lines of an --expect file named name.
func ParseExpectations(name string, r io.Reader) ([]Expectation, error) {
	var out []Expectation
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cell, verdict, ok := cutLast(line, ":")
		if !ok {
			return nil, usage.Errorf("expect", "%s line %d: %q has no verdict: write ROW × FAULT: VERDICT, e.g. \"etcd mutex fenced all × pause-holder: valid\"", name, n, line)
		}
		verdict = strings.TrimSpace(verdict)
		if !slices.Contains(ExpectedVerdicts, verdict) {
			return nil, usage.Errorf("expect", "%s line %d: verdict %q is not one of %s", name, n, verdict, strings.Join(ExpectedVerdicts, ", "))
		}
		row, fault, ok := cutLast(cell, " × ")
		if !ok {
			row, fault, ok = cutLast(cell, " x ")
		}
		row, fault = strings.Join(strings.Fields(row), " "), strings.TrimSpace(fault)
		if !ok || row == "" || fault == "" {
			return nil, usage.Errorf("expect", "%s line %d: %q names no cell: write ROW × FAULT (or ROW x FAULT) before the colon, e.g. \"etcd mutex fenced all × pause-holder\"", name, n, cell)
		}
		e := Expectation{Row: row, Fault: fault, Verdict: verdict, Line: n}
		if i := slices.IndexFunc(out, func(o Expectation) bool { return o.Row == e.Row && o.Fault == e.Fault }); i >= 0 {
			return nil, usage.Errorf("expect", "%s line %d: cell %q is already expected on line %d", name, n, e.Cell(), out[i].Line)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, usage.Errorf("expect", "reading %s: %v", name, err)
	}
	if len(out) == 0 {
		return nil, usage.Errorf("expect", "%s names no cell (lines ROW × FAULT: VERDICT, docs/compare.md)", name)
	}
	return out, nil
}

// cutLast cuts s around the last sep.
func cutLast(s, sep string) (before, after string, ok bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+len(sep):], true
}

// CheckExpectations refuses, before anything runs, an expectation whose
// cell the matrix does not have, naming the rows or faults it has.
func (m *Matrix) CheckExpectations(exps []Expectation) error {
	var rows []string
	for _, r := range m.Rows {
		rows = append(rows, r.String())
	}
	for _, e := range exps {
		switch {
		case !slices.Contains(rows, e.Row):
			return usage.Errorf("expect", "line %d: the matrix has no row %q (its rows: %s)", e.Line, e.Row, quoteList(rows))
		case !slices.Contains(m.Faults, e.Fault):
			return usage.Errorf("expect", "line %d: the matrix has no fault %q, so no cell %q (its faults: %s)", e.Line, e.Fault, e.Cell(), quoteList(m.Faults))
		}
	}
	return nil
}

func quoteList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// CellVerdict is a cell's verdict as an --expect line names it: valid,
// invalid or unknown when every run agrees, not-valid when no run is
// valid, n/a for a cell not run; otherwise the cell's verdicts ("valid
// 2/3, invalid 1/3"), which no expectation matches.
func CellVerdict(c result.CompareCell) string {
	n := len(c.Runs)
	switch {
	case c.NotApplicable != "":
		return "n/a"
	case n == 0 || c.Missing > 0 || c.Verdicts[result.Error] > 0:
		return c.VerdictText()
	}
	for _, v := range []string{"valid", "invalid", "unknown"} {
		if c.Verdicts[v] == n {
			return v
		}
	}
	if c.Verdicts["valid"] == 0 {
		return "not-valid"
	}
	return c.VerdictText()
}

// meets says whether a cell whose verdict is got meets want.
func meets(want, got string) bool {
	return want == got || (want == "not-valid" && (got == "invalid" || got == "unknown"))
}

// Unmet lists the expectations c does not meet, one sentence each naming
// the cell: "etcd mutex fenced all × pause-holder: expected valid, got
// invalid 1/1". m is the matrix c ran (its rows in c's order).
func (m *Matrix) Unmet(c *result.Comparison, exps []Expectation) []string {
	var out []string
	for _, e := range exps {
		i := slices.IndexFunc(m.Rows, func(r Row) bool { return r.String() == e.Row })
		j := slices.Index(c.Faults, e.Fault)
		if i < 0 || j < 0 || i >= len(c.Rows) || j >= len(c.Rows[i].Cells) {
			out = append(out, fmt.Sprintf("%s: expected %s, but the comparison has no such cell", e.Cell(), e.Verdict))
			continue
		}
		got := CellVerdict(c.Rows[i].Cells[j])
		if !meets(e.Verdict, got) {
			out = append(out, fmt.Sprintf("%s: expected %s, got %s", e.Cell(), e.Verdict, got))
		}
	}
	return out
}

// WriteExpect writes the comparison's own cells as an --expect file into
// dir (runstore.Comparison.Expect): what a CI user copies to pin the
// matrix.
func (m *Matrix) WriteExpect(dir string, c *result.Comparison) error {
	return runstore.WriteFile(runstore.Comparison(dir).Expect(), func(f *os.File) error {
		_, err := f.WriteString(m.expectFile(c))
		return err
	})
}

// expectFile is the comparison's own cells as an --expect file.
func (m *Matrix) expectFile(c *result.Comparison) string {
	var b strings.Builder
	b.WriteString("# check compare --expect: each cell's verdict, as this comparison found it (docs/compare.md)\n")
	for i, r := range m.Rows {
		if i >= len(c.Rows) {
			break
		}
		for _, cell := range c.Rows[i].Cells {
			v := CellVerdict(cell)
			if !slices.Contains(ExpectedVerdicts, v) {
				// Runs that disagree, or did not all come back: nothing
				// to pin, said as a comment.
				fmt.Fprintf(&b, "# %s × %s: %s (no one verdict to pin)\n", r.String(), cell.Fault, v)
				continue
			}
			fmt.Fprintf(&b, "%s × %s: %s\n", r.String(), cell.Fault, v)
		}
	}
	return b.String()
}
