package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/runstore"
)

// etcd issue 14370, the broken release beside the fixed one: a one-member
// etcd 3.5.4 acknowledged a write before its raft log held it, so a panic
// at raftBeforeSave (the failpoint of etcd's own regression test) right
// after the reply lost the write; 3.5.5 saves first. The failpoint is
// aimed at a holder's write to the resource kept in etcd (--storage etcd),
// and each run must show the server panicking there (its own log), being
// started again by the heal, and the lock granted after it: 3.5.4 then
// invalid (the write read back older), 3.5.5 valid with a grant after
// every crash, so its VALID is not one of a service that stopped
// answering.
func TestDockerEtcd14370RaftBeforeSavePanic(t *testing.T) {
	for _, tc := range []struct {
		version string
		want    models.Verdict
	}{
		{"3.5.4", models.Invalid},
		{"3.5.5", models.Valid},
	} {
		cfg := dockerConfig(t, "etcd", "none", "failpoint")
		cfg.ServerVersion, cfg.Nodes, cfg.Clients, cfg.Storage = tc.version, 1, 2, "etcd"
		cfg.TimeLimit = 15 * time.Second
		cfg.NemesisInterval = 2 * time.Second
		cfg.Seed = 1
		cfg.Options = map[string]string{"failpoint": "raftBeforeSave=panic", "failpoint-when": "grant"}
		start := time.Now()
		out := runDocker(t, cfg)
		crashes, after := crashesAndGrantsAfter(t, out)
		if crashes == 0 {
			t.Fatalf("%s: no server went down under the failpoint (store %s)", tc.version, out.Dir)
		}
		for i, n := range after {
			if n == 0 {
				t.Errorf("%s: nothing was granted after crash %d's heal (store %s)", tc.version, i+1, out.Dir)
			}
		}
		if !serverPanicked(t, out) {
			t.Errorf("%s: no server's log shows gofail's panic in raftNode.start (store %s)", tc.version, out.Dir)
		}
		if out.Result.Verdict != tc.want {
			t.Errorf("%s: verdict %s, want %s: %s (store %s)", tc.version, out.Result.Verdict, tc.want, out.Result.Explanation, out.Dir)
		}
		t.Logf("%s: %s in %s, %d crashes, grants after each heal %v: %s", tc.version, out.Result.Verdict,
			time.Since(start).Round(time.Second), crashes, after, out.Result.Explanation)
	}
}

// crashesAndGrantsAfter counts the servers check.log says went down under
// the failpoint, and the grants after each of the fault's heals.
func crashesAndGrantsAfter(t *testing.T, out *RunResult) (int, []int) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(out.Dir, runstore.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	events, err := history.ParseFile(filepath.Join(out.Dir, runstore.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var after []int
	for _, h := range events {
		if !h.IsNemesis() || h.F != "failpoint" || h.Type != history.Info || h.Error != "" || len(h.Nodes) == 0 {
			continue
		}
		n := 0
		for _, e := range events {
			if !e.IsNemesis() && e.F == history.Acquire && e.Type == history.OK && e.Time > h.Time {
				n++
			}
		}
		after = append(after, n)
	}
	return strings.Count(string(log), "went down under raftBeforeSave=panic"), after
}

// serverPanicked says whether a server's log has gofail's panic ("panic:
// failpoint panic: {}", a panic with no argument) raised in
// raftNode.start, where raftBeforeSave is.
func serverPanicked(t *testing.T, out *RunResult) bool {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(out.Dir, runstore.LogsDir, "*", "var", "log", "fencecheck", "etcd.log"))
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "failpoint panic:") && strings.Contains(string(b), "etcdserver.(*raftNode).start") {
			return true
		}
	}
	return false
}
