package binomial

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-4 }

func TestUpperZeroEventsIsTheClosedForm(t *testing.T) {
	for _, n := range []int{1, 3, 10, 43, 100, 1000} {
		want := 1 - math.Pow(0.05, 1/float64(n))
		if got := Upper(0, n, 0.95); !near(got, want) {
			t.Errorf("Upper(0, %d) = %.5f, want %.5f", n, got, want)
		}
	}
	if got := Upper(0, 43, 0.95); math.Round(got*1000)/10 != 6.7 {
		t.Errorf("0 of 43: %.4f, want 6.7 %%", got)
	}
}

// Published Clopper–Pearson values (two-sided 95 %: 2.5 % each side).
func TestIntervalKnownValues(t *testing.T) {
	cases := []struct {
		k, n   int
		lo, hi float64
	}{
		{5, 10, 0.18709, 0.81291},
		{1, 10, 0.00253, 0.44502},
		{0, 10, 0, 0.30850},
		{10, 10, 0.69150, 1},
		{3, 100, 0.00622, 0.08518},
	}
	for _, c := range cases {
		lo, hi := Interval(c.k, c.n, 0.95)
		if !near(lo, c.lo) || !near(hi, c.hi) {
			t.Errorf("Interval(%d, %d) = [%.5f, %.5f], want [%.5f, %.5f]", c.k, c.n, lo, hi, c.lo, c.hi)
		}
	}
}

func TestNoTrialsNoKnowledge(t *testing.T) {
	if Upper(0, 0, 0.95) != 1 || Lower(0, 0, 0.95) != 0 {
		t.Error("with no trial the bounds must be [0, 1]")
	}
}
