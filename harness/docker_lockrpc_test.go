package harness

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// etcd's server-side Lock RPC (the v3lock service behind `etcdctl lock`):
// the lease is the client's, the lock key's create revision the token.

func lockRPCConfig(t *testing.T, version, fencing string, nemesis ...string) Config {
	cfg := dockerConfig(t, "etcd", fencing, nemesis...)
	cfg.Recipe = "lock-rpc"
	cfg.ServerVersion = version
	cfg.TimeLimit = 12 * time.Second
	return cfg
}

// readDamage reads the run's damage back from its results.json.
func readDamage(t *testing.T, out *RunResult) models.Damage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out.Dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res reports.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	t.Logf("damage: %s", res.Damage.Text())
	return res.Damage
}

func TestDockerEtcdLockRPCUnfencedUnderHolderPauseIsInvalid(t *testing.T) {
	out := runDocker(t, lockRPCConfig(t, "3.6", "none", "pause-holder"))
	wantDocker(t, out, models.Invalid)
	if !strings.Contains(out.Result.Explanation, "stale lease holder's write was accepted") {
		t.Errorf("explanation does not name the stale write: %s", out.Result.Explanation)
	}
	d := readDamage(t, out)
	if d.StaleWritesAccepted == 0 || d.LostMin == nil || *d.LostMin == 0 {
		t.Errorf("an invalid run under pause-holder without fencing did no measured damage: %+v", d)
	}
}

// On Debian's 3.4 as well: the Lock RPC is served by both builds.
func TestDockerEtcdLockRPCFencedUnderHolderPauseIsValid(t *testing.T) {
	out := runDocker(t, lockRPCConfig(t, "3.4", "all", "pause-holder"))
	wantDocker(t, out, models.Valid)
	d := readDamage(t, out)
	if d.LostMin == nil || *d.LostMax != 0 || d.StaleWritesAccepted != 0 {
		t.Errorf("fenced, yet damage: %+v", d)
	}
	if d.StaleRefused == 0 {
		t.Errorf("the paused holder's stale ops were not refused: %+v", d)
	}
}

// Partitions and kills with fencing: valid, nothing acknowledged lost, and
// the final read succeeds after healing.
func TestDockerEtcdLockRPCFencedUnderPartitionsAndKillsIsValid(t *testing.T) {
	cfg := lockRPCConfig(t, "3.6", "all", "kill-leader", "partition-ring", "kill")
	cfg.TimeLimit = 20 * time.Second
	out := runDocker(t, cfg)
	wantDocker(t, out, models.Valid)
	faultsInjected(t, out)
	d := readDamage(t, out)
	if d.Keys[0].Final != models.FinalOK {
		t.Fatalf("the final read did not succeed after healing: %+v", d.Keys[0])
	}
	if *d.LostMin != 0 || d.StaleWritesAccepted != 0 || d.Acknowledged == 0 {
		t.Errorf("fenced, yet damage (or no work done): %+v", d)
	}
}

// The known answer of Jepsen's etcd lock figure: a client that trusts its
// grant (--lease-check none), bound to one server, with every server
// frozen at once, loses acknowledged updates on Debian's etcd 3.4 — the
// server hands out locks on leases that expired while it was frozen, and
// the client acts on them. The same seed with fencing loses nothing: the
// storage refuses every stale token (0 for a grant whose key was already
// gone).
func TestDockerEtcdTrustingClientUnderPauseAllLosesUpdatesUnlessFenced(t *testing.T) {
	// Each subtest passes its own t: lockRPCConfig may skip (-short), and
	// a parallel subtest must never skip or fail its parent.
	trusting := func(t *testing.T, fencing string) Config {
		cfg := lockRPCConfig(t, "3.4", fencing, "pause-all")
		cfg.LeaseCheck, cfg.ClientEndpoints = "none", ClientEndpointsOne
		cfg.Dwell, cfg.PauseDuration, cfg.NemesisInterval = 2*time.Second, 5*time.Second, 3*time.Second
		cfg.TimeLimit, cfg.Seed = 18*time.Second, 3
		return cfg
	}
	// The two clusters run side by side: the test stays near a minute
	// and a half.
	t.Run("unfenced", func(t *testing.T) {
		t.Parallel()
		out := runDocker(t, trusting(t, "none"))
		wantDocker(t, out, models.Invalid)
		if d := readDamage(t, out); d.LostMin == nil || *d.LostMin == 0 {
			t.Errorf("invalid, yet no acknowledged update certainly lost: %+v", d)
		}
	})
	t.Run("fenced", func(t *testing.T) {
		t.Parallel()
		out := runDocker(t, trusting(t, "all"))
		wantDocker(t, out, models.Valid)
		if d := readDamage(t, out); d.LostMax == nil || *d.LostMax != 0 || d.StaleWritesAccepted != 0 || d.StaleRefused == 0 {
			t.Errorf("fenced, yet damage (or nothing stale to refuse): %+v", d)
		}
	})
}

// etcd 3.5 and 3.7 are compiled from the Go module proxy when a run asks
// for them (once per machine, then from the cache) and copied into the
// server nodes: each runs, says it is the release asked for (runDocker's
// checkServers), and keeps a fenced run valid under a holder's pause.
func TestDockerEtcdOnDemandVersionsRunAndSayWhatTheyAre(t *testing.T) {
	for _, v := range []string{"3.5", "3.7"} {
		t.Run(v, func(t *testing.T) {
			cfg := lockRPCConfig(t, v, "all", "pause-holder")
			cfg.TimeLimit = 8 * time.Second
			out := runDocker(t, cfg)
			wantDocker(t, out, models.Valid)
			if n := out.Report.Servers; n == nil || len(n.Nodes) == 0 || !strings.HasPrefix(n.Nodes[0].Version, v+".") {
				t.Errorf("servers: %+v", n)
			}
		})
	}
}
