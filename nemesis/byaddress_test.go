package nemesis

import (
	"errors"
	"strings"
	"testing"
)

// With the servers out of reach, only the faults on fencecheck's own
// containers pass; every other registered fault is refused by name with
// the reason, and unknown words are left to CheckNames.
func TestCheckByAddress(t *testing.T) {
	allowed := map[string]bool{}
	for _, n := range ByAddress() {
		allowed[n] = true
	}
	for _, want := range []string{None, "pause", PauseHolderName, "partition-client", "partition-client-storage"} {
		if !allowed[want] {
			t.Errorf("ByAddress() = %v lacks %s", ByAddress(), want)
		}
	}
	for _, n := range Names() {
		err := CheckByAddress([]string{n})
		var un *Unavailable
		switch {
		case allowed[n] && err != nil:
			t.Errorf("%s: %v", n, err)
		case !allowed[n] && (!errors.As(err, &un) || un.Fault != n || !strings.Contains(err.Error(), "needs access to the servers; --endpoints gives none")):
			t.Errorf("%s: got %v, want it refused for needing the servers", n, err)
		}
	}
	if err := CheckByAddress([]string{"no-such-fault"}); err != nil {
		t.Errorf("an unknown word is CheckNames' to refuse, got %v", err)
	}
}
