package harness

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/models"
)

// postgresConfig is a Docker run of the postgres backend with recipe.
func postgresConfig(t *testing.T, recipe, fencing string, nemesis ...string) Config {
	cfg := dockerConfig(t, "postgres", fencing, nemesis...)
	cfg.Recipe = recipe
	return cfg
}

// completions counts the client completions of type typ whose error is
// errText ("" for any).
func completions(t *testing.T, out *RunResult, typ history.Type, errText string) int {
	t.Helper()
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range events {
		if !e.IsNemesis() && e.Type == typ && (errText == "" || e.Error == errText) {
			n++
		}
	}
	return n
}

// serverLog is the lock server's log, as collected into the run directory.
func serverLog(t *testing.T, out *RunResult, node string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out.Dir, "logs", node, "var", "log", "fencecheck", "postgres.log"))
	if err != nil {
		t.Fatalf("the server log of %s: %v", node, err)
	}
	return string(b)
}

// idleSessionEnd is what PostgreSQL logs when idle_session_timeout ends a
// session.
const idleSessionEnd = "terminating connection due to idle-session timeout"

// secretShape is a generated password: 32 hex digits standing alone.
var secretShape = regexp.MustCompile(`(^|[^0-9a-f])[0-9a-f]{32}([^0-9a-f]|$)`)

// noSecretIn fails when any file of the run directory holds something
// shaped like a generated password.
func noSecretIn(t *testing.T, dir string) {
	t.Helper()
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if loc := secretShape.FindIndex(b); loc != nil {
			t.Errorf("%s holds a password-shaped string at byte %d", path, loc[0])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestDockerPostgresCleanRunsAreValid(t *testing.T) {
	for _, recipe := range []string{"lease", "advisory"} {
		t.Run(recipe, func(t *testing.T) {
			cfg := postgresConfig(t, recipe, "all", "none")
			cfg.TimeLimit = 8 * time.Second
			cfg.Keys = 2
			out := runDocker(t, cfg)
			wantDocker(t, out, models.Valid)
			if n := completions(t, out, history.OK, ""); n < 50 {
				t.Errorf("only %d ok ops in a clean run", n)
			}
			noSecretIn(t, out.Dir)
		})
	}
}

// The lease recipe without fencing: a holder frozen past its lease writes
// over its successor when it wakes, before its keepalive learns the lease
// is gone.
func TestDockerPostgresUnfencedLeaseUnderHolderPauseIsInvalid(t *testing.T) {
	out := runDocker(t, postgresConfig(t, "lease", "none", "pause-holder"))
	wantDocker(t, out, models.Invalid)
	if !strings.Contains(out.Result.Explanation, "stale lease holder's write was accepted") {
		t.Errorf("explanation does not name the stale write: %s", out.Result.Explanation)
	}
}

// The same with the lease row's token checked by the storage: the stale
// holder is refused.
func TestDockerPostgresFencedLeaseUnderHolderPauseIsValid(t *testing.T) {
	out := runDocker(t, postgresConfig(t, "lease", "all", "pause-holder"))
	wantDocker(t, out, models.Valid)
	if n := completions(t, out, history.Fail, lockclient.ErrorFenced); n == 0 {
		t.Errorf("no op was fenced: the pauses never made a stale holder")
	}
}

// PostgreSQL as the shared storage behind etcd's lock: the fence in SQL
// does what the fenced node does.
func TestDockerPostgresStorageUnderHolderPause(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		cfg := dockerConfig(t, "etcd", "none", "pause-holder")
		cfg.Storage = "postgres"
		out := runDocker(t, cfg)
		wantDocker(t, out, models.Invalid)
		if !strings.Contains(out.Result.Explanation, "stale lease holder's write was accepted") {
			t.Errorf("explanation does not name the stale write: %s", out.Result.Explanation)
		}
	})
	t.Run("all", func(t *testing.T) {
		cfg := dockerConfig(t, "etcd", "all", "pause-holder")
		cfg.Storage = "postgres"
		out := runDocker(t, cfg)
		wantDocker(t, out, models.Valid)
		if n := completions(t, out, history.Fail, lockclient.ErrorFenced); n == 0 {
			t.Errorf("no op was fenced: the pauses never made a stale holder")
		}
		noSecretIn(t, out.Dir)
	})
}

// An advisory lock has no expiry: what frees a frozen holder's lock is the
// server ending its idle session (idle_session_timeout = lease TTL; a
// paused container's kernel still ACKs keepalives). The holder wakes
// believing it holds the lock and writes before its next ping fails.
// Without a token the storage cannot tell it from its successor, whatever
// the fencing mode; with the sequence's token it can.
func TestDockerPostgresAdvisoryUnderHolderPause(t *testing.T) {
	for _, c := range []struct {
		recipe string
		want   models.Verdict
	}{{"advisory-notoken", models.Invalid}, {"advisory", models.Valid}} {
		t.Run(c.recipe, func(t *testing.T) {
			out := runDocker(t, postgresConfig(t, c.recipe, "all", "pause-holder"))
			wantDocker(t, out, c.want)
			if log := serverLog(t, out, "n1"); !strings.Contains(log, idleSessionEnd) {
				t.Errorf("the server never ended an idle session: the pauses did not outlast idle_session_timeout")
			}
			if c.recipe == "advisory" {
				if n := completions(t, out, history.Fail, lockclient.ErrorFenced); n == 0 {
					t.Errorf("no op was fenced: the pauses never made a stale holder")
				}
			}
		})
	}
}

// A holder cut off from the server (still reaching the storage) for three
// leases: the server ends its silent session one TTL after the last ping
// that arrived, and frees the lock; the holder's own ping (every TTL/3,
// giving up after TTL/3) fails first, so the client stops before anyone
// else is granted the lock. The verdict is valid with and without a
// token, and with no fencing at all: under a partition, unlike a pause,
// the timing holds.
func TestDockerPostgresAdvisoryUnderClientPartition(t *testing.T) {
	for _, recipe := range []string{"advisory-notoken", "advisory"} {
		t.Run(recipe, func(t *testing.T) {
			cfg := postgresConfig(t, recipe, "none", "partition-client")
			cfg.TimeLimit = 20 * time.Second
			// The fault lands while the holder works, and lasts long
			// enough for the server to give up on it.
			cfg.Work = cfg.LeaseTTL
			cfg.PauseDuration = 3 * cfg.LeaseTTL
			cfg.NemesisInterval = 3 * cfg.LeaseTTL
			out := runDocker(t, cfg)
			wantDocker(t, out, models.Valid)
			if log := serverLog(t, out, "n1"); !strings.Contains(log, idleSessionEnd) {
				t.Errorf("the server never ended the cut-off holder's session")
			}
			if n := completions(t, out, history.Fail, "lease-lost"); n == 0 {
				t.Errorf("no client learnt its lock was lost: the partition never hit a holder")
			}
		})
	}
}
