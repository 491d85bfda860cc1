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
// after. A VALID is held to its cuts: made, at least one grant after them
// that a lost grant could contradict (the verdict itself makes a run
// without one unknown), and, where the service leaves data unsynced,
// something dropped — else the layer could have lost nothing and passed.

func powerConfig(t *testing.T, backend, fault string) Config {
	cfg := dockerConfig(t, backend, "all", fault)
	cfg.TimeLimit = 12 * time.Second
	cfg.NemesisInterval = 2 * time.Second
	return cfg
}

// powerCuts are a run's power cuts, which a run under a power fault must
// have counted; the test fails when no cut was made.
func powerCuts(t *testing.T, out *RunResult) *models.PowerCuts {
	t.Helper()
	p := out.Result.PowerCuts
	if p == nil || p.Made == 0 {
		t.Fatalf("no power cut took effect (store %s): %+v", out.Dir, p)
	}
	t.Logf("power cuts: %s", p.Text())
	return p
}

// wantProvenValid wants a valid run whose cuts were granted after.
func wantProvenValid(t *testing.T, out *RunResult) *models.PowerCuts {
	t.Helper()
	p := powerCuts(t, out)
	wantDocker(t, out, models.Valid)
	if p.PostCutGrants == 0 || p.Failed > 0 {
		t.Fatalf("valid with %d post-cut grants and %d failed cuts (store %s)", p.PostCutGrants, p.Failed, out.Dir)
	}
	return p
}

// Redis documents aof-always as losing nothing: the token counter
// survives the power cut, and the service grants on above it.
func TestDockerRedisIncrTokenUnderPowerLossAOFAlwaysIsValid(t *testing.T) {
	cfg := powerConfig(t, "redis", "power-loss")
	cfg.Recipe = redis.SetNXIncr
	cfg.Options = map[string]string{redis.PersistenceFlag: "aof-always"}
	start := time.Now()
	out := runDocker(t, cfg)
	wantProvenValid(t, out)
	t.Logf("%s", time.Since(start).Round(time.Second))
}

// Redis documents up to a second lost under aof-everysec: a counter
// incremented within that second before the cut rolls back, and a token
// is granted twice. Not every cut lands in such a second, so a few runs
// may be needed; none invalid means the layer did not lose what it
// should. The invalid run's cuts dropped something: the loss is the
// layer's doing.
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
			if p := powerCuts(t, out); p.DroppedBytes == 0 {
				t.Errorf("invalid, but no cut dropped a byte: %s (store %s)", p.DropText(), out.Dir)
			}
			return
		}
		dirs = append(dirs, out.Dir)
	}
	t.Fatalf("3 runs under power-loss with aof-everysec, none invalid: the layer loses less than a power cut (stores %s)", strings.Join(dirs, ", "))
}

// etcd fsyncs its WAL before it acknowledges: every server losing its
// power at once loses nothing acknowledged, and it grants on after. Each
// cut changes a file in every node (measured: 1 file a node, 0 bytes of
// pages — a size the layer had not synced), so the layer did act.
func TestDockerEtcdUnderPowerLossAllIsValid(t *testing.T) {
	cfg := powerConfig(t, "etcd", "power-loss-all")
	start := time.Now()
	out := runDocker(t, cfg)
	if p := wantProvenValid(t, out); p.DroppedFiles == 0 {
		t.Errorf("no cut dropped a file: %s", p.DropText())
	}
	t.Logf("%s", time.Since(start).Round(time.Second))
}
