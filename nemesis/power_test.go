package nemesis

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// A power fault needs the backend's data directory: one whose servers
// keep nothing on disk (the memory backend's lockd) is refused before
// anything starts, with the reason.
func TestPowerFaultsNeedADataDirectory(t *testing.T) {
	for _, n := range PowerFaults {
		err := Check(n, Settings{Backend: "memory", Docker: true, Servers: 1})
		var u *Unavailable
		if !errors.As(err, &u) || !strings.Contains(err.Error(), "keep nothing on a disk") {
			t.Errorf("%s without a data directory: %v, want an *Unavailable saying why", n, err)
		}
		if err := Check(n, Settings{Backend: "etcd", Docker: true, Servers: 3, DataDir: "/var/lib/fencecheck/etcd"}); err != nil {
			t.Errorf("%s with a data directory: %v", n, err)
		}
		if !Prepares([]string{n}) {
			t.Errorf("%s has no Prepare step: its layer must be in place before the servers start", n)
		}
	}
	if got := DiskDir("/var/lib/fencecheck/etcd/"); got != "/var/lib/fencecheck/etcd.disk" {
		t.Errorf("DiskDir = %q", got)
	}
}

// --power-at, --power-torn and --power-silent are checked before anything
// starts; an aimed cut needs a log to count the syncs of.
func TestPowerFlags(t *testing.T) {
	for _, v := range []string{"", "random", "grant", "before-sync:1", "after-sync:12"} {
		if _, err := parsePowerAt(v); err != nil {
			t.Errorf("--power-at %s: %v", v, err)
		}
	}
	for _, v := range []string{"now", "before-sync", "before-sync:0", "during-sync:2", "after-sync:x"} {
		if _, err := parsePowerAt(v); err == nil {
			t.Errorf("--power-at %s accepted", v)
		}
	}
	etcd := Settings{Backend: "etcd", Docker: true, Servers: 3, DataDir: "/var/lib/fencecheck/etcd", DataLog: "*.wal"}
	for _, opts := range []map[string]string{
		{"power-at": "grant"}, {"power-at": "before-sync:3", "power-torn": "torn-seq"}, {"power-silent": "true", "power-torn": "torn-op", "power-dir-entries": "need-fsync"},
	} {
		if err := CheckFlags([]string{"power-loss-all"}, opts); err != nil {
			t.Errorf("%v: %v", opts, err)
		}
		etcd.Options = opts
		if err := Check("power-loss-all", etcd); err != nil {
			t.Errorf("%v: %v", opts, err)
		}
	}
	for _, opts := range []map[string]string{{"power-torn": "half"}, {"power-silent": "yes"}, {"power-log": "["}, {"power-dir-entries": "lost"}} {
		if err := CheckFlags([]string{"power-loss"}, opts); err == nil {
			t.Errorf("%v accepted", opts)
		}
	}
	if err := CheckFlags([]string{"kill"}, map[string]string{"power-at": "grant"}); err == nil || !strings.Contains(err.Error(), "power-loss") {
		t.Errorf("--power-at without a power fault: %v", err)
	}
	nolog := Settings{Backend: "custom", Docker: true, Servers: 1, DataDir: "/data", Options: map[string]string{"power-at": "grant"}}
	if err := Check("power-loss", nolog); err == nil || !strings.Contains(err.Error(), "--power-log") {
		t.Errorf("an aimed cut on a backend naming no log: %v", err)
	}
	nolog.Options["power-log"] = "*.log"
	if err := Check("power-loss", nolog); err != nil {
		t.Errorf("with --power-log: %v", err)
	}
	if err := Check("power-loss-majority", Settings{Backend: "redis", Docker: true, Servers: 1, DataDir: "/data"}); err == nil {
		t.Error("power-loss-majority accepted one server: a majority of one is all of it")
	}
}

// power-loss-majority takes a majority and never all, the same nodes
// for the same seed.
func TestPowerMajorityPick(t *testing.T) {
	all := func(context.Context) ([]string, error) { return []string{"n1", "n2", "n3", "n4", "n5"}, nil }
	p := &PowerCut{Label: "power-loss-majority", Targets: all, Pick: pickMajority}
	seen := map[string]bool{}
	for seed := uint64(0); seed < 20; seed++ {
		ts, err := p.pick(context.Background(), rand.New(rand.NewPCG(seed, 0)))
		if err != nil || len(ts) != 3 {
			t.Fatalf("seed %d: %v, %v", seed, ts, err)
		}
		again, _ := p.pick(context.Background(), rand.New(rand.NewPCG(seed, 0)))
		if !slices.Equal(ts, again) {
			t.Fatalf("seed %d drew %v, then %v", seed, ts, again)
		}
		seen[strings.Join(ts, ",")] = true
	}
	if len(seen) < 3 {
		t.Errorf("20 seeds drew only %v", seen)
	}
}
