package harness

import (
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/dockertest"
	"github.com/fencecheck/fencecheck/models"
)

// An exact etcd release (3.5.4, the release of etcd's bug 14370) on one
// member: compiled from the module proxy once (`check image build --all`
// compiles it up front, from then on the cache), copied into the node,
// and it says it is exactly 3.5.4 on /version (runDocker's checkServers).
// A kill takes the whole service down and back: the fenced run is
// valid, and the one member served grants after its restart.
func TestDockerEtcdExactReleaseOnOneMember(t *testing.T) {
	cfg := dockerConfig(t, "etcd", "all", "kill")
	dockertest.Budget(t, 2*time.Minute)
	cfg.ServerVersion, cfg.Nodes = "3.5.4", 1
	cfg.TimeLimit = 10 * time.Second
	out := runDocker(t, cfg)
	wantDocker(t, out, models.Valid)
	faults, events := faultsInjected(t, out)
	if faults["kill"] == 0 {
		t.Errorf("no kill took effect: %v", faults)
	}
	sv := out.Report.Servers
	if sv == nil || len(sv.Nodes) != 1 || sv.Nodes[0].Version != "3.5.4" {
		t.Fatalf("servers: %+v, want one member saying 3.5.4", sv)
	}
	grantedAfterKill := false
	killed := false
	for _, e := range events {
		if e.IsNemesis() && e.F == "kill" {
			killed = true
		}
		if killed && !e.IsNemesis() && e.F == history.Acquire && e.Type == history.OK {
			grantedAfterKill = true
		}
	}
	if !grantedAfterKill {
		t.Error("no lock was granted after the kill: the valid verdict shows nothing about the restarted member")
	}
}
