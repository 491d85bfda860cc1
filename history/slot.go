package history

import "strconv"

// SlotName names client slot i (1-based): c1, c2, … It is also the name of
// the slot's container in Docker and of its gate in process, so faults,
// reports and the cluster agree on it.
func SlotName(i int) string { return "c" + strconv.Itoa(i) }

// SlotOf names the slot process p runs in when slots slots run: a slot
// whose process is retired goes on as process p + slots, so p runs in
// slot p mod slots + 1 (docs/history.md). It is "" when either is unknown
// (slots < 1 or p < 0).
func SlotOf(p, slots int) string {
	if slots < 1 || p < 0 {
		return ""
	}
	return SlotName(p%slots + 1)
}
