package zookeeper

import "testing"

func TestParseZxid(t *testing.T) {
	out := "Zookeeper version: 3.8.0-${mvngit.commit.id}, built on 2022-09-06 12:00 UTC\nLatency min/avg/max: 0/0.5/12\nReceived: 120\nSent: 119\nConnections: 1\nOutstanding: 0\nZxid: 0x20000002b\nMode: follower\nNode count: 9\n"
	if z, err := parseZxid("n1", out); err != nil || z != 0x20000002b {
		t.Errorf("got %#x, %v", z, err)
	}
	if _, err := parseZxid("n1", "This ZooKeeper instance is not currently serving requests\n"); err == nil {
		t.Error("no zxid line was read")
	}
}
