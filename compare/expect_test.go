package compare

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/compare/result"
)

func cellOf(verdicts ...string) result.CompareCell {
	c := result.CompareCell{Fault: "kill", Verdicts: map[string]int{}}
	for _, v := range verdicts {
		c.Verdicts[v]++
		c.Runs = append(c.Runs, result.CompareRun{Verdict: v})
	}
	return c
}

// A cell's verdict as an --expect line names it, and which expectations
// it meets: a broken release invalid in two seeds and unknown in one is
// not-valid, and no run valid.
func TestCellVerdicts(t *testing.T) {
	for _, c := range []struct {
		cell       result.CompareCell
		want       string
		meets, not []string
	}{
		{cellOf("valid", "valid", "valid"), "valid", []string{"valid"}, []string{"not-valid", "invalid"}},
		{cellOf("invalid", "invalid"), "invalid", []string{"invalid", "not-valid"}, []string{"valid"}},
		{cellOf("invalid", "unknown", "invalid"), "not-valid", []string{"not-valid"}, []string{"invalid", "unknown", "valid"}},
		{cellOf("valid", "invalid"), "invalid 1/2, valid 1/2", nil, []string{"valid", "invalid", "not-valid"}},
		{cellOf("valid", result.Error), "valid 1/2, error 1/2", nil, []string{"valid"}},
		{result.CompareCell{NotApplicable: "in-process"}, "n/a", []string{"n/a"}, []string{"valid"}},
	} {
		got := CellVerdict(c.cell)
		if got != c.want {
			t.Errorf("%v: verdict %q, want %q", c.cell.Verdicts, got, c.want)
		}
		for _, w := range c.meets {
			if !meets(w, got) {
				t.Errorf("%q does not meet %s", got, w)
			}
		}
		for _, w := range c.not {
			if meets(w, got) {
				t.Errorf("%q meets %s", got, w)
			}
		}
	}
}

// Lines are read with × or x, comments and blank lines skipped, and a
// cell named twice is refused with both lines.
func TestParseExpectations(t *testing.T) {
	exps, err := ParseExpectations("pin", strings.NewReader("# pinned\n\netcd 3.5 mutex fenced all [safe: --etcd-unsafe-no-fsync false] × power-loss-all: valid\nnats kv fenced all x kill+pause: not-valid\n"))
	if err != nil || len(exps) != 2 {
		t.Fatalf("%v, %+v", err, exps)
	}
	if e := exps[0]; e.Row != "etcd 3.5 mutex fenced all [safe: --etcd-unsafe-no-fsync false]" || e.Fault != "power-loss-all" || e.Verdict != "valid" || e.Line != 3 {
		t.Errorf("first %+v", e)
	}
	if e := exps[1]; e.Row != "nats kv fenced all" || e.Fault != "kill+pause" || e.Verdict != "not-valid" {
		t.Errorf("second %+v", e)
	}
	_, err = ParseExpectations("pin", strings.NewReader("a b c d × kill: valid\na b c d × kill: invalid\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("a cell twice: %v", err)
	}
}
