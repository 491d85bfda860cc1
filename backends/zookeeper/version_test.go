package zookeeper

import "testing"

// Debian's ZooKeeper answers srvr with a build placeholder its packaging
// never filled in: the answer is kept as it is, the version is the
// release at its start.
func TestParseSrvrVersion(t *testing.T) {
	srvr := "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC\n" +
		"Latency min/avg/max: 0/0.5/3\nReceived: 12\nSent: 11\nConnections: 1\nOutstanding: 0\n" +
		"Zxid: 0x100000002\nMode: follower\nNode count: 5\n"
	v, err := parseSrvrVersion("n2", srvr)
	if err != nil {
		t.Fatal(err)
	}
	if v.Version != "3.8.0" || v.Answer != "3.8.0-${mvngit.commit.id}, built on 2024-12-29 17:54 UTC" {
		t.Errorf("got %+v", v)
	}
	if v, err := parseSrvrVersion("n2", "This ZooKeeper instance is not currently serving requests\n"); err == nil {
		t.Errorf("a server not serving was read as %+v", v)
	}
}
