package harness

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

func TestDockerZookeeperCleanRunIsValid(t *testing.T) {
	cfg := dockerConfig(t, "zookeeper", "none", "none")
	cfg.TimeLimit = 8 * time.Second
	cfg.Keys = 2
	out := runDocker(t, cfg)
	wantDocker(t, out, models.Valid)
	wantFinalReads(t, out, cfg.Keys)
}

// The session is the lease: a frozen holder's session expires, its znode
// goes, the next client takes the lock, and the frozen one writes when it
// thaws: the pause falls between the client's check of its session and
// its write, so watching the session's state does not stop the write.
func TestDockerZookeeperUnfencedLockUnderHolderPauseIsInvalid(t *testing.T) {
	out := runDocker(t, dockerConfig(t, "zookeeper", "none", "pause-holder"))
	wantDocker(t, out, models.Invalid)
	if !strings.Contains(out.Result.Explanation, "stale lease holder's write was accepted") {
		t.Errorf("explanation does not name the stale write: %s", out.Result.Explanation)
	}
}

// Every pause leaves a stale write on its way; the storage must refuse
// it, and the verdict is valid only because it did.
func TestDockerZookeeperFencedLockUnderHolderPauseIsValid(t *testing.T) {
	out := runDocker(t, dockerConfig(t, "zookeeper", "all", "pause-holder"))
	wantDocker(t, out, models.Valid)
	wantFaults(t, out, "pause-holder")
	if fencedOps(t, out) == 0 {
		t.Errorf("no stale op was fenced: the pauses proved nothing")
	}
}

// The leader's death costs every session its connection (followers drop
// their clients until a new leader is elected); czxid tokens keep growing
// across the new epoch, and the ensemble serves the final reads after the
// killed server is back.
func TestDockerZookeeperFencedLockUnderLeaderKillIsValid(t *testing.T) {
	cfg := dockerConfig(t, "zookeeper", "all", "kill-leader")
	cfg.TimeLimit = 20 * time.Second
	out := runDocker(t, cfg)
	wantDocker(t, out, models.Valid)
	wantFaults(t, out, "kill-leader")
	wantFinalReads(t, out, cfg.Keys)
}

// The leader cut off from its followers stops serving within syncLimit
// ticks; the majority elects another and the cut-off side's clients lose
// their sessions.
func TestDockerZookeeperFencedLockUnderLeaderIsolationIsValid(t *testing.T) {
	cfg := dockerConfig(t, "zookeeper", "all", "partition-primary")
	cfg.TimeLimit = 20 * time.Second
	out := runDocker(t, cfg)
	wantDocker(t, out, models.Valid)
	wantFaults(t, out, "partition-primary")
	wantFinalReads(t, out, cfg.Keys)
}

// wantFaults checks that the nemesis hit something with f at least once.
func wantFaults(t *testing.T, out *RunResult, f string) {
	t.Helper()
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	_, faults := history.Pair(events)
	for _, fl := range faults {
		if fl.F == f && len(fl.Nodes) > 0 && fl.Error == "" {
			return
		}
	}
	t.Errorf("no %s fault took effect: %+v", f, faults)
}

// wantFinalReads checks that the lock service recovered: every key's
// final read (the read of the highest process, past all the workers') is
// ok.
func wantFinalReads(t *testing.T, out *RunResult, keys int) {
	t.Helper()
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ops, _ := history.Pair(events)
	final := map[string]history.Op{}
	for _, o := range ops {
		if o.F == history.Read && (final[o.Key].F == "" || o.Process > final[o.Key].Process) {
			final[o.Key] = o
		}
	}
	if len(final) != keys {
		t.Errorf("final reads of %d keys, want %d", len(final), keys)
	}
	for k, o := range final {
		if o.Type != history.OK {
			t.Errorf("final read of %s by process %d: %s %s", k, o.Process, o.Type, o.Error)
		}
	}
}
