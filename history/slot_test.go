package history

import "testing"

// A slot's processes are p, p+n, p+2n, …: each runs in slot p mod n + 1,
// named as the containers are.
func TestSlotOfFollowsTheRetiredProcesses(t *testing.T) {
	for _, c := range []struct {
		p, slots int
		want     string
	}{{0, 3, "c1"}, {2, 3, "c3"}, {3, 3, "c1"}, {7, 3, "c2"}, {4, 1, "c1"}, {1, 0, ""}, {-1, 3, ""}} {
		if got := SlotOf(c.p, c.slots); got != c.want {
			t.Errorf("SlotOf(%d, %d) = %q, want %q", c.p, c.slots, got, c.want)
		}
	}
	if SlotName(12) != "c12" {
		t.Errorf("SlotName(12) = %q", SlotName(12))
	}
}
