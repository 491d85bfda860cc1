package redis

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// The topology's flags: what is accepted, and each refusal names the fix.
func TestSentinelFlags(t *testing.T) {
	for _, ok := range []string{"", Single, Sentinel} {
		if err := CheckTopology(ok); err != nil {
			t.Errorf("topology %q refused: %v", ok, err)
		}
	}
	if err := CheckTopology("cluster"); err == nil || !strings.Contains(err.Error(), "single, sentinel") {
		t.Errorf("topology cluster: %v", err)
	}
	for _, v := range []string{"", "1s", "250ms"} {
		if err := checkMillis(v); err != nil {
			t.Errorf("duration %q refused: %v", v, err)
		}
	}
	for _, v := range []string{"1", "50ms", "1500us", "-1s"} {
		if err := checkMillis(v); err == nil {
			t.Errorf("duration %q accepted", v)
		}
	}
	for v, ok := range map[string]bool{"": true, "0": true, "1": true, "2": true, "3": false, "-1": false, "x": false} {
		if err := CheckMinReplicas(v); (err == nil) != ok {
			t.Errorf("min replicas %q: %v", v, err)
		}
	}
	s := sentinelSettings(map[string]string{DownAfterFlag: "700ms", MinReplicasFlag: "1"})
	if s.DownAfter != 700*time.Millisecond || s.FailoverTimeout != DefaultFailoverTimeout || s.MinReplicas != 1 {
		t.Errorf("settings %+v", s)
	}
}

// The sentinel topology is three servers for the single-master recipes,
// refuses Redlock and a --client's other --nodes, and its own flags are
// refused without it.
func TestSentinelTopologySetup(t *testing.T) {
	b, _ := registry.Lookup("redis")
	sentinel := map[string]string{TopologyFlag: Sentinel}
	for _, recipe := range []string{SetNX, SetNXIncr, SetNXIncrWait} {
		db, n, err := b.NewDB(registry.Setup{Recipe: recipe, Options: sentinel})
		if err != nil || n != 3 {
			t.Fatalf("%s: %d servers, %v", recipe, n, err)
		}
		if d := db.(*DB); d.Topology != Sentinel || d.Sentinel.DownAfter != DefaultDownAfter {
			t.Errorf("%s: %+v", recipe, d)
		}
	}
	var ue *usage.Error
	if _, _, err := b.NewDB(registry.Setup{Recipe: Redlock, Options: sentinel}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "independent masters") {
		t.Errorf("redlock on sentinel: %v", err)
	}
	if _, _, err := b.NewDB(registry.Setup{Client: "x", ClientServers: 5, Options: sentinel}); !errors.As(err, &ue) {
		t.Errorf("a client asking for 5 on sentinel: %v", err)
	}
	if _, n, err := b.NewDB(registry.Setup{Client: "x", Options: sentinel}); err != nil || n != 3 {
		t.Errorf("a client on sentinel: %d, %v", n, err)
	}
	if _, _, err := b.NewDB(registry.Setup{Recipe: SetNX, Options: map[string]string{DownAfterFlag: "1s"}}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--redis-topology sentinel") {
		t.Errorf("down-after without the topology: %v", err)
	}
	if n, err := Servers(SetNXIncrWait); err != nil || n != 1 {
		t.Errorf("setnx-incr-wait: %d, %v", n, err)
	}
}

// Each Sentinel monitors the master under the name clients ask for, at
// quorum 2, with the settings given; the endpoints carry that name.
func TestSentinelConfAndEndpoints(t *testing.T) {
	d := &DB{Topology: Sentinel, Sentinel: SentinelSettings{DownAfter: 1500 * time.Millisecond, FailoverTimeout: 4 * time.Second}, nodes: []string{"n1", "n2", "n3"}}
	conf := d.sentinelConf("10.0.0.2", "10.0.0.1")
	for _, want := range []string{"port 26379\n", "bind 10.0.0.2 127.0.0.1\n", "sentinel monitor fencecheck 10.0.0.1 6379 2\n",
		"sentinel down-after-milliseconds fencecheck 1500\n", "sentinel failover-timeout fencecheck 4000\n", "dir " + SentinelDir + "\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("sentinel.conf lacks %q:\n%s", want, conf)
		}
	}
	eps := d.Endpoints()
	if len(eps) != 3 || eps[1] != "redis-sentinel://n2:26379/fencecheck" {
		t.Errorf("endpoints %v", eps)
	}
	// The built-in client takes them, and refuses a malformed one.
	if _, err := NewClient(eps, SetNXIncr, time.Second, fenced.NewStore(fenced.All)); err != nil {
		t.Errorf("client over the Sentinels: %v", err)
	}
	if _, err := NewClient([]string{"redis-sentinel://n1:26379"}, SetNXIncr, time.Second, fenced.NewStore(fenced.All)); err == nil || !strings.Contains(err.Error(), "<master name>") {
		t.Errorf("no master name: %v", err)
	}
}

// redis-cli --csv's pub/sub lines split into their fields; the master's
// address is mapped to its node.
func TestSentinelEventLines(t *testing.T) {
	got := csvFields(`"message","+switch-master","fencecheck 10.0.0.1 6379 10.0.0.3 6379"`)
	if fmt.Sprint(got) != "[message +switch-master fencecheck 10.0.0.1 6379 10.0.0.3 6379]" {
		t.Errorf("fields %q", got)
	}
	d := &DB{ips: map[string]string{"n1": "10.0.0.1", "n3": "10.0.0.3"}}
	if d.nodeOf("10.0.0.3") != "n3" || d.nodeOf("10.0.0.9") != "" {
		t.Errorf("nodeOf")
	}
}

// Finding no Sentinel to name the master sends nothing: a definite
// failure, not an unknown outcome.
func TestNoSentinelIsDefinite(t *testing.T) {
	err := fmt.Errorf("redis: all sentinels specified in configuration are unreachable: %w", errors.New("i/o timeout"))
	if nodeOutcome(err) != no {
		t.Errorf("%v: not definite", err)
	}
}

// setnx-incr-wait needs a replica to wait for.
func TestWaitRecipeNeedsReplicas(t *testing.T) {
	b, _ := registry.Lookup("redis")
	var ue *usage.Error
	if _, _, err := b.NewDB(registry.Setup{Recipe: SetNXIncrWait}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "--redis-topology sentinel") {
		t.Errorf("setnx-incr-wait on one master: %v", err)
	}
}
