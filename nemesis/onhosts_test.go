package nemesis

import (
	"errors"
	"strings"
	"testing"
)

// On hosts the faults built over the SSH driver pass; latency, the clock,
// power and failpoint faults are refused by name with what is missing,
// and every word onHosts names is a registered fault.
func TestCheckOnHosts(t *testing.T) {
	for n := range onHosts {
		if _, ok := kinds[n]; !ok {
			t.Errorf("onHosts names %q, which is no fault", n)
		}
	}
	for _, want := range []string{None, PauseHolderName, "kill", "partition-one", "partition-client"} {
		if !strings.Contains(","+strings.Join(OnHosts(), ",")+",", ","+want+",") {
			t.Errorf("OnHosts() = %v lacks %s", OnHosts(), want)
		}
	}
	for _, c := range []struct{ fault, why string }{
		{"latency", "tc netem"},
		{"clock-jump", "libfaketime"},
		{"power-loss", "FUSE"},
		{"failpoint", "not been tried on hosts"},
	} {
		err := CheckOnHosts([]string{PauseHolderName, c.fault})
		var un *Unavailable
		if !errors.As(err, &un) || un.Fault != c.fault || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), "--hosts") {
			t.Errorf("%s: got %v, want it refused by name, saying %q", c.fault, err, c.why)
		}
	}
	for _, n := range OnHosts() {
		if err := CheckOnHosts([]string{n}); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if err := CheckOnHosts([]string{"no-such-fault"}); err != nil {
		t.Errorf("an unknown word is CheckNames' to refuse, got %v", err)
	}
}
