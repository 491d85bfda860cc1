package harness

import (
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/internal/dockertest"
	"github.com/fencecheck/fencecheck/models"
)

// An exact etcd release (3.5.4, the release of etcd's bug 14370) on one
// member: compiled from the module proxy once (`check image build --all`
// compiles it up front, from then on the cache), copied into the node,
// and it says it is exactly 3.5.4 on /version (runDocker's checkServers,
// and below). A paused holder's late ops are refused by the fenced
// storage: the lock was exercised on the one member, and the run is
// valid. (A kill of the one member is not used here: the clients, whose
// only endpoint it is, stayed without an answer for seconds after it
// was back — docs/versions.md, "One member".)
func TestDockerEtcdExactReleaseOnOneMember(t *testing.T) {
	cfg := dockerConfig(t, "etcd", "all", "pause-holder")
	dockertest.Budget(t, 2*time.Minute)
	cfg.ServerVersion, cfg.Nodes = "3.5.4", 1
	cfg.TimeLimit = 10 * time.Second
	out := runDocker(t, cfg)
	wantDocker(t, out, models.Valid)
	sv := out.Report.Servers
	if sv == nil || len(sv.Nodes) != 1 || sv.Nodes[0].Version != "3.5.4" {
		t.Fatalf("servers: %+v, want one member saying 3.5.4", sv)
	}
	if d := readDamage(t, out); d.LostMax == nil || *d.LostMax != 0 || d.StaleWritesAccepted != 0 || d.StaleRefused == 0 || d.Acknowledged == 0 {
		t.Errorf("fenced on one member, yet damage (or nothing stale to refuse, or no work): %+v", d)
	}
}
