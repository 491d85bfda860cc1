package redis

import "testing"

func TestParseCounters(t *testing.T) {
	cs := parseCounters("n2", "fencecheck:token:{k0} 448\nfencecheck:token:{k10} 35\nfencecheck:lock:{k0} abc\n\n")
	if len(cs) != 2 || cs[0].Key != "k0" || cs[0].Value != 448 || cs[1].Key != "k10" || cs[1].Value != 35 || cs[1].Node != "n2" {
		t.Errorf("got %+v", cs)
	}
	if d := replicationDetail("# Replication\r\nrole:master\r\nconnected_slaves:2\r\nmaster_repl_offset:81234\r\n"); d != "master, replication offset 81234" {
		t.Errorf("detail %q", d)
	}
}
