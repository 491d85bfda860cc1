package postgres

import "testing"

// psql's unaligned output of the final read: one value, none (0), or
// something else (an error naming it, never a silent 0).
func TestParseValue(t *testing.T) {
	for out, want := range map[string]int64{"17\n": 17, "": 0, "\n": 0, "-3\n": -3} {
		if v, err := parseValue(out); err != nil || v != want {
			t.Errorf("%q: %d, %v; want %d", out, v, err, want)
		}
	}
	if _, err := parseValue("1\n2\n"); err == nil {
		t.Error("two rows read as one value")
	}
	if q := quote("k'0"); q != "'k''0'" {
		t.Errorf("quote: %s", q)
	}
}
