package nemesis

import (
	"strings"
)

// onHosts are the faults a run on the user's own hosts (--hosts, the SSH
// driver) can inject, with how: each goes through what the driver does
// itself (its freezer, its partition chain, the servers' pid files).
var onHosts = map[string]string{
	"pause":                     "freezes a client host's processes of the test",
	PauseHolderName:             "freezes the holder's client host's processes of the test",
	"pause-server":              "freezes a server host's processes of the test",
	"pause-leader":              "freezes the leader's host's processes of the test",
	"pause-all":                 "freezes every server host's processes of the test",
	"kill":                      "SIGKILLs a server through its pid file and starts it again",
	"kill-leader":               "SIGKILLs the leader through its pid file and starts it again",
	"partition":                 "drops peers in the test's own iptables chain on each host",
	"partition-one":             "drops peers in the test's own iptables chain on each host",
	"partition-halves":          "drops peers in the test's own iptables chain on each host",
	"partition-ring":            "drops peers in the test's own iptables chain on each host",
	"partition-bridge":          "drops peers in the test's own iptables chain on each host",
	"partition-primary":         "drops peers in the test's own iptables chain on each host",
	"partition-client":          "drops the servers in the holder's client host's own chain",
	"partition-client-storage":  "drops the storage in the holder's client host's own chain",
	"partition-primary-clients": "drops peers in the test's own iptables chain on each host",
}

// notOnHosts says why the faults not yet built over SSH are refused on
// hosts, by the start of their names.
var notOnHosts = []struct{ prefix, why string }{
	{"latency", "the delay on hosts (tc netem, the user-space delayer as the fallback) is not built yet"},
	{"clock-", "the clock faults on hosts (libfaketime in a server fencecheck starts; a host's own clock only where the inventory allows it) are not built yet"},
	{"power-", "the power faults need their filesystem layer mounted over a host's data directory (FUSE), which is not built yet"},
	{"failpoint", "the failpoint build has not been tried on hosts yet"},
}

// OnHosts lists the faults a run on hosts can inject, none first, then by
// name.
func OnHosts() []string {
	out := []string{None}
	for _, n := range Names() {
		if _, ok := onHosts[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// CheckOnHosts refuses the first fault of names that a run on the user's
// hosts cannot inject yet (an *Unavailable naming it and why); unknown
// words are left to CheckNames.
func CheckOnHosts(names []string) error {
	for _, n := range names {
		if _, known := kinds[n]; !known || n == None {
			continue
		}
		if _, ok := onHosts[n]; ok {
			continue
		}
		why := "it has not been built over SSH yet"
		for _, r := range notOnHosts {
			if strings.HasPrefix(n, r.prefix) {
				why = r.why
				break
			}
		}
		return unavailable(n, "fault %s is not available on hosts (--hosts): %s (accepted on hosts: %s)", n, why, strings.Join(OnHosts(), ", "))
	}
	return nil
}
