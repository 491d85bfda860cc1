package history

import (
	"math"
	"testing"
)

// An op ended at the client's own reading when it has one, else when the
// completion was recorded, else at its call; info ops never end at their
// (unknown) return.
func TestEnded(t *testing.T) {
	for _, c := range []struct {
		name string
		op   Op
		want int64
	}{
		{"ok with the client's reading", Op{Type: OK, Call: 10, Return: 15, Done: 20}, 15},
		{"fail with the client's reading", Op{Type: Fail, Call: 10, Return: 12, Done: 20}, 12},
		{"info that completed", Op{Type: Info, Call: 10, Return: math.MaxInt64, Done: 30}, 30},
		{"never completed", Op{Type: Info, Call: 10, Return: math.MaxInt64}, 10},
	} {
		if got := c.op.Ended(); got != c.want {
			t.Errorf("%s: ended at %d, want %d", c.name, got, c.want)
		}
	}
}

func TestSeconds(t *testing.T) {
	for in, want := range map[int64]string{0: "0.00 s", 4_031_000_000: "4.03 s", 800_000_000: "0.80 s", math.MaxInt64: "an unknown time"} {
		if got := Seconds(in); got != want {
			t.Errorf("Seconds(%d) = %q, want %q", in, got, want)
		}
	}
}
