package harness

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/redis"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/models"
)

// nemesisEvents counts the faults named f that took effect in a run.
func nemesisEvents(t *testing.T, out *RunResult, f string) int {
	t.Helper()
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events {
		if e.IsNemesis() && e.F == f && e.Type == history.Invoke {
			n++
		}
	}
	return n
}

// fencedOps counts the ops the storage refused as fenced.
func fencedOps(t *testing.T, out *RunResult) int {
	t.Helper()
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events {
		if !e.IsNemesis() && e.Type == history.Fail && e.Error == lockclient.ErrorFenced {
			n++
		}
	}
	return n
}

func TestDockerRedisCleanRunsAreValid(t *testing.T) {
	for _, recipe := range []string{redis.SetNX, redis.SetNXIncr, redis.Redlock} {
		t.Run(recipe, func(t *testing.T) {
			cfg := dockerConfig(t, "redis", "none", "none")
			cfg.Recipe = recipe
			cfg.TimeLimit = 8 * time.Second
			cfg.Keys = 2
			wantDocker(t, runDocker(t, cfg), models.Valid)
		})
	}
}

// holderPauseConfig is a pause-holder run: the freeze lands at the
// client's write failpoint, after its lease check.
func holderPauseConfig(t *testing.T, recipe string) Config {
	cfg := dockerConfig(t, "redis", "all", "pause-holder")
	cfg.Recipe = recipe
	return cfg
}

// No token to fence with: fencing every op with token 0 admits every op,
// so the paused holder's stale write still lands. Without tokens the
// checker sees it as a lost update.
func TestDockerRedisTokenlessLockUnderHolderPauseIsInvalid(t *testing.T) {
	for _, recipe := range []string{redis.SetNX, redis.Redlock} {
		t.Run(recipe, func(t *testing.T) {
			out := runDocker(t, holderPauseConfig(t, recipe))
			wantDocker(t, out, models.Invalid)
			if !strings.Contains(out.Result.Explanation, "an update was lost") {
				t.Errorf("explanation does not name the lost update: %s", out.Result.Explanation)
			}
		})
	}
}

func TestDockerRedisIncrTokenUnderHolderPauseIsValid(t *testing.T) {
	out := runDocker(t, holderPauseConfig(t, redis.SetNXIncr))
	wantDocker(t, out, models.Valid)
	if fencedOps(t, out) == 0 {
		t.Errorf("no stale op was fenced: the pauses proved nothing (store %s)", out.Dir)
	}
}

// A kill of the only master: the lock key has expired by the restart (the
// kill lasts longer than the lease) whatever the persistence, but the
// token counter survives only in the AOF. Without it the counter starts
// again at 1 and hands out tokens already granted.
//
// aof-everysec is not here: it survives most kills, but Redis puts its
// AOF write off while a background fsync runs and answers anyway, so a
// kill in that window loses an acknowledged token (CI saw it: token 195
// acknowledged 40 ms before the kill, granted again after it;
// docs/backends.md). Neither verdict is the known answer.
func TestDockerRedisIncrTokenUnderKill(t *testing.T) {
	for _, c := range []struct {
		persistence string
		want        models.Verdict
	}{
		{"default", models.Invalid},
		{"none", models.Invalid},
		{"aof-always", models.Valid},
	} {
		t.Run(c.persistence, func(t *testing.T) {
			cfg := dockerConfig(t, "redis", "all", "kill")
			cfg.Recipe = redis.SetNXIncr
			cfg.Options = map[string]string{redis.PersistenceFlag: c.persistence}
			out := runDocker(t, cfg)
			if n := nemesisEvents(t, out, "kill"); n == 0 {
				t.Fatalf("no kill took effect (store %s)", out.Dir)
			}
			wantDocker(t, out, c.want)
			if c.want == models.Invalid && !strings.Contains(out.Result.Explanation, "tokens must only increase") {
				t.Errorf("explanation does not name the repeated token: %s", out.Result.Explanation)
			}
		})
	}
}
