package harness

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/redis"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/models"
)

// warmRun is what a test compares between a run on a new cluster and one
// on the cluster an earlier run left.
type warmRun struct {
	out                 *RunResult
	okAcquires, okWrite int
	firstToken, maxTok  uint64
	fenced              int
}

func summarizeWarm(t *testing.T, out *RunResult) warmRun {
	t.Helper()
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := warmRun{out: out}
	for _, e := range events {
		if e.IsNemesis() || e.Type != history.OK && e.Type != history.Fail {
			continue
		}
		switch {
		case e.Type == history.Fail && e.Error == lockclient.ErrorFenced:
			w.fenced++
		case e.Type != history.OK:
		case e.F == "acquire":
			w.okAcquires++
			if w.firstToken == 0 {
				w.firstToken = e.Token
			}
			w.maxTok = max(w.maxTok, e.Token)
		case e.F == "write":
			w.okWrite++
		}
	}
	return w
}

// paramValue is the run's parameter name as its report shows it ("docker
// cluster": new or warm).
func paramValue(out *RunResult, name string) string {
	for _, p := range out.Report.Params {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// runWarmPair runs cfg twice with one seed through one set of warm
// clusters: first on a new cluster, then on the one the first run left.
// hook, when set, is each run's phase hook (run 0 or 1, its state).
func runWarmPair(t *testing.T, cfg Config, hook func(run int, st *runState, phase string)) (fresh, reused warmRun) {
	t.Helper()
	p := NewClusters()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	var outs [2]*RunResult
	for i := range 2 {
		st := &runState{clusters: p}
		if hook != nil {
			st.phaseHook = func(phase string) { hook(i, st, phase) }
		}
		out, err := runWith(quiet(), cfg, testWriter{t}, st)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		outs[i] = out
	}
	if outs[0].TestID != outs[1].TestID {
		t.Fatalf("the second run did not take the first one's cluster: %s, then %s", outs[0].TestID, outs[1].TestID)
	}
	if got := paramValue(outs[0], "docker cluster"); got != "new" {
		t.Errorf("first run's cluster: %q, want new", got)
	}
	if got := paramValue(outs[1], "docker cluster"); !strings.HasPrefix(got, "warm") {
		t.Errorf("second run's cluster: %q, want warm", got)
	}
	return summarizeWarm(t, outs[0]), summarizeWarm(t, outs[1])
}

// Isolation of warm clusters, on every backend: the same seed on a new
// cluster and on the one it left gives the same verdict, about as many
// ops, and the second run starts from nothing — its first token is as
// low as a new cluster's (the lock service's data was removed, so its
// revisions, zxids and sequences start again) and the fenced storage
// refuses none of its ops (a storage kept from the first run would have
// seen the first run's higher tokens and refused every one).
func TestDockerWarmClusterRunsAsANewOne(t *testing.T) {
	for _, backend := range []string{"etcd", "zookeeper", "postgres", "redis"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			cfg := dockerConfig(t, backend, "all", "none")
			if backend == "redis" {
				// The recipe with a token, so that the first token says
				// whether the servers' data went.
				cfg.Recipe = redis.SetNXIncr
			}
			cfg.TimeLimit = 5 * time.Second
			cfg.Seed = 7
			fresh, reused := runWarmPair(t, cfg, nil)
			t.Logf("new cluster: %d acquires, %d writes, tokens %d..%d; warm: %d acquires, %d writes, tokens %d..%d",
				fresh.okAcquires, fresh.okWrite, fresh.firstToken, fresh.maxTok, reused.okAcquires, reused.okWrite, reused.firstToken, reused.maxTok)
			for i, w := range []warmRun{fresh, reused} {
				if w.out.Result.Verdict != models.Valid {
					t.Errorf("run %d (%s): %s: %s", i+1, paramValue(w.out, "docker cluster"), w.out.Result.Verdict, w.out.Result.Explanation)
				}
				if w.fenced != 0 {
					t.Errorf("run %d (%s): %d ops refused as fenced in a run without faults", i+1, paramValue(w.out, "docker cluster"), w.fenced)
				}
			}
			// Op counts differ with timing from run to run; a reused
			// cluster that slowed the service down (or sped it up by
			// skipping work) would differ by far more than a third.
			if reused.okAcquires*3 < fresh.okAcquires || fresh.okAcquires*3 < reused.okAcquires || reused.okWrite == 0 {
				t.Errorf("op counts: new cluster %d acquires, %d writes; warm %d, %d", fresh.okAcquires, fresh.okWrite, reused.okAcquires, reused.okWrite)
			}
			if fresh.maxTok > 0 && reused.firstToken >= fresh.maxTok {
				t.Errorf("the warm run's first token %d is not below the first run's last %d: the lock service kept its state", reused.firstToken, fresh.maxTok)
			}
		})
	}
}

// processes are the pids of node's processes whose command line is args.
func processes(t *testing.T, cl *engine.Cluster, node, args string) []string {
	t.Helper()
	res, err := cl.Exec(context.Background(), node, []string{"ps", "-e", "-o", "pid=,args="})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("ps in %s: %v %s", node, err, res.Stderr)
	}
	var pids []string
	for _, line := range strings.Split(res.Stdout, "\n") {
		pid, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		if strings.TrimSpace(rest) == args {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A run whose lock holders are killed while they hold the lock (SIGKILL
// of every agent as the workload ends, each in a critical section of up
// to a second), and that leaves a stray process in a client node, leaves
// a cluster the next run can use: the next run finds neither, and gives
// its verdict as on a new cluster.
func TestDockerWarmClusterAfterHoldersKilledHolding(t *testing.T) {
	cfg := dockerConfig(t, "etcd", "all", "none")
	cfg.TimeLimit = 6 * time.Second
	cfg.Dwell = time.Second
	cfg.Seed = 3
	ctx := context.Background()
	killed := 0
	attach := func(st *runState) *engine.Cluster {
		cli, err := engine.Connect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cl, err := engine.Attach(ctx, cli, st.testID)
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	fresh, reused := runWarmPair(t, cfg, func(run int, st *runState, phase string) {
		switch {
		case run == 0 && phase == "heal":
			// The workload's time is up and its holders are still in
			// their sections: kill every agent where it stands, and
			// leave a process no run started.
			cl := attach(st)
			for _, n := range cl.All() {
				if n.Role != engine.RoleClient {
					continue
				}
				for _, pid := range processes(t, cl, n.Name, engine.BinaryPath+" agent") {
					if _, err := cl.Exec(ctx, n.Name, []string{"kill", "-9", pid}); err != nil {
						t.Fatalf("killing agent %s in %s: %v", pid, n.Name, err)
					}
					killed++
				}
			}
			if _, err := cl.ExecDetached(ctx, "c1", []string{"sleep", "1000"}, engine.ExecOptions{}); err != nil {
				t.Fatal(err)
			}
		case run == 1 && phase == "workload":
			if pids := processes(t, attach(st), "c1", "sleep 1000"); len(pids) > 0 {
				t.Errorf("the first run's stray process survived into the second: pid %v", pids)
			}
		}
	})
	if killed == 0 {
		t.Fatal("no agent was running when the first run's workload ended, so none was killed")
	}
	t.Logf("killed %d agents; new cluster: %s, %d acquires; warm: %s, %d acquires",
		killed, fresh.out.Result.Verdict, fresh.okAcquires, reused.out.Result.Verdict, reused.okAcquires)
	if reused.out.Result.Verdict != models.Valid {
		t.Errorf("the warm run: %s (%s)", reused.out.Result.Verdict, reused.out.Result.Explanation)
	}
	if reused.okWrite == 0 || reused.fenced != 0 {
		t.Errorf("the warm run wrote %d times and had %d ops fenced", reused.okWrite, reused.fenced)
	}
}
