package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/redis"
	"github.com/fencecheck/fencecheck/models"
)

// The power faults' known answers (docs/power-loss.md). Each run has a
// cluster of its own (the layer is laid before the servers start), so the
// workloads are short: a power cut needs a few grants before it and one
// after.

func powerConfig(t *testing.T, backend, fault string) Config {
	cfg := dockerConfig(t, backend, "all", fault)
	cfg.TimeLimit = 12 * time.Second
	cfg.NemesisInterval = 2 * time.Second
	return cfg
}

// Redis documents aof-always as losing nothing: the token counter
// survives the power cut.
func TestDockerRedisIncrTokenUnderPowerLossAOFAlwaysIsValid(t *testing.T) {
	cfg := powerConfig(t, "redis", "power-loss")
	cfg.Recipe = redis.SetNXIncr
	cfg.Options = map[string]string{redis.PersistenceFlag: "aof-always"}
	start := time.Now()
	out := runDocker(t, cfg)
	if n := nemesisEvents(t, out, "power-loss"); n == 0 {
		t.Fatalf("no power cut took effect (store %s)", out.Dir)
	}
	wantDocker(t, out, models.Valid)
	t.Logf("%s", time.Since(start).Round(time.Second))
}

// Redis documents up to a second lost under aof-everysec: a counter
// incremented within that second before the cut rolls back, and a token
// is granted twice. Not every cut lands in such a second, so a few runs
// may be needed; none invalid means the layer did not lose what it
// should.
func TestDockerRedisIncrTokenUnderPowerLossAOFEverysecIsInvalid(t *testing.T) {
	var dirs []string
	for run := 1; run <= 3; run++ {
		cfg := powerConfig(t, "redis", "power-loss")
		cfg.Recipe = redis.SetNXIncr
		cfg.Options = map[string]string{redis.PersistenceFlag: "aof-everysec"}
		start := time.Now()
		out := runDocker(t, cfg)
		t.Logf("run %d: %s in %s: %s", run, out.Result.Verdict, time.Since(start).Round(time.Second), out.Result.Explanation)
		if out.Result.Verdict == models.Invalid {
			if !strings.Contains(out.Result.Explanation, "granted twice") && !strings.Contains(out.Result.Explanation, "tokens must only increase") {
				t.Errorf("the explanation does not name the repeated token: %s", out.Result.Explanation)
			}
			return
		}
		dirs = append(dirs, out.Dir)
	}
	t.Fatalf("3 runs under power-loss with aof-everysec, none invalid: the layer loses less than a power cut (stores %s)", strings.Join(dirs, ", "))
}

// etcd fsyncs its WAL before it acknowledges: every server losing its
// power at once loses nothing acknowledged.
func TestDockerEtcdUnderPowerLossAllIsValid(t *testing.T) {
	cfg := powerConfig(t, "etcd", "power-loss-all")
	start := time.Now()
	out := runDocker(t, cfg)
	if n := nemesisEvents(t, out, "power-loss-all"); n == 0 {
		t.Fatalf("no power cut took effect (store %s)", out.Dir)
	}
	wantDocker(t, out, models.Valid)
	t.Logf("%s", time.Since(start).Round(time.Second))
}
