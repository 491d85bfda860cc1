package zookeeper

import (
	"strings"
	"testing"
	"time"
)

func TestTimingFitsTheLeaseInZooKeepersBounds(t *testing.T) {
	for _, tc := range []struct {
		ttl           time.Duration
		tick, session time.Duration
		clamped       bool
	}{
		{100 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, true},
		{200 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, false},
		{1500 * time.Millisecond, 150 * time.Millisecond, 1500 * time.Millisecond, false},
		{2 * time.Second, 200 * time.Millisecond, 2 * time.Second, false},
		{2*time.Second + 300*time.Microsecond, 200 * time.Millisecond, 2001 * time.Millisecond, false},
		{10 * time.Second, time.Second, 10 * time.Second, false},
		{40 * time.Second, 2 * time.Second, 40 * time.Second, false},
		{90 * time.Second, 4500 * time.Millisecond, 90 * time.Second, false},
		{10 * time.Minute, 30 * time.Second, 10 * time.Minute, false},
	} {
		tm := TimingFor(tc.ttl)
		if tm.Tick != tc.tick || tm.Session != tc.session || tm.Clamped != tc.clamped {
			t.Errorf("TimingFor(%s) = tick %s, session %s, clamped %v; want %s, %s, %v", tc.ttl, tm.Tick, tm.Session, tm.Clamped, tc.tick, tc.session, tc.clamped)
		}
		if g := tm.Granted(tm.Session); g != tm.Session {
			t.Errorf("TimingFor(%s): a server would grant %s for %s", tc.ttl, g, tm.Session)
		}
		if time.Duration(tm.SyncLimit)*tm.Tick < 2*time.Second || time.Duration(tm.InitLimit)*tm.Tick < 10*time.Second {
			t.Errorf("TimingFor(%s): syncLimit %d, initLimit %d ticks of %s are too short", tc.ttl, tm.SyncLimit, tm.InitLimit, tm.Tick)
		}
	}
}

func TestConfigNamesEveryServer(t *testing.T) {
	cfg := TimingFor(2 * time.Second).Config([]string{"n1", "n2", "n3"})
	for _, want := range []string{"tickTime=200\n", "initLimit=50\n", "syncLimit=10\n", "server.3=n3:2888:3888\n",
		"4lw.commands.whitelist=srvr,mntr,ruok\n", "dataDir=/var/lib/fencecheck/zookeeper\n"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("zoo.cfg lacks %q:\n%s", want, cfg)
		}
	}
}

func TestPredecessorOrdersBySequenceNotName(t *testing.T) {
	children := []string{
		"_c_ffff-lock-0000000003",
		"_c_0000-lock-0000000005",
		"_c_aaaa-lock-0000000001",
		"not-a-lock",
	}
	for _, tc := range []struct {
		own, pred string
		found     bool
	}{
		{"_c_aaaa-lock-0000000001", "", true},
		{"_c_ffff-lock-0000000003", "_c_aaaa-lock-0000000001", true},
		{"_c_0000-lock-0000000005", "_c_ffff-lock-0000000003", true},
		{"_c_bbbb-lock-0000000004", "", false},
	} {
		pred, found := predecessor(children, tc.own)
		if pred != tc.pred || found != tc.found {
			t.Errorf("predecessor(%s) = %q, %v; want %q, %v", tc.own, pred, found, tc.pred, tc.found)
		}
	}
}
