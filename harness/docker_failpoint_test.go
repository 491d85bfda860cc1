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

// A failpoint armed to panic takes a one-member etcd down at the named
// place in its code (the server's own log says so), the heal starts it
// again, the lock is granted after it, and the run comes to its verdict.
// etcd 3.5.36 saves its raft log before it acknowledges a write (the fix
// of etcd issue 14370 came with 3.5.5), so a panic before the save loses
// nothing acknowledged: valid.
func TestDockerEtcdFailpointPanicRestartsTheServer(t *testing.T) {
	cfg := dockerConfig(t, "etcd", "all", "failpoint")
	cfg.ServerVersion = "3.5"
	cfg.Nodes = 1
	cfg.TimeLimit = 12 * time.Second
	cfg.NemesisInterval = 2 * time.Second
	cfg.Options = map[string]string{"failpoint": "raftBeforeSave=panic"}
	start := time.Now()
	out := runDocker(t, cfg)
	events, err := history.ParseFile(filepath.Join(out.Dir, runstore.HistoryFile))
	if err != nil {
		t.Fatal(err)
	}
	var healed int64
	for _, e := range events {
		if e.IsNemesis() && e.F == "failpoint" && e.Type == history.Info && e.Error == "" && len(e.Nodes) > 0 && healed == 0 {
			healed = e.Time
		}
	}
	if healed == 0 {
		t.Fatalf("no failpoint was armed and healed (store %s)", out.Dir)
	}
	grantsAfter := 0
	for _, e := range events {
		if !e.IsNemesis() && e.F == history.Acquire && e.Type == history.OK && e.Time > healed {
			grantsAfter++
		}
	}
	if grantsAfter == 0 {
		t.Errorf("no lock was granted after the failpoint's heal (store %s)", out.Dir)
	}
	log, err := os.ReadFile(filepath.Join(out.Dir, runstore.LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), "went down under raftBeforeSave=panic") {
		t.Errorf("check.log does not say a server went down and was started again (store %s)", out.Dir)
	}
	panicked := false
	logs, _ := filepath.Glob(filepath.Join(out.Dir, runstore.LogsDir, "*", "var", "log", "fencecheck", "etcd.log"))
	for _, p := range logs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// gofail's panic: "panic: failpoint panic: {}" (a panic with no
		// argument), raised in raftNode.start, where raftBeforeSave is.
		panicked = panicked || (strings.Contains(string(b), "failpoint panic:") && strings.Contains(string(b), "etcdserver/raft.go"))
	}
	if !panicked {
		t.Errorf("no server's log (%d read) shows gofail's panic at raftBeforeSave (store %s)", len(logs), out.Dir)
	}
	wantDocker(t, out, models.Valid)
	t.Logf("%s, %d grants after the first heal", time.Since(start).Round(time.Second), grantsAfter)
}
