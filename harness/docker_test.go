package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/dockertest"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/runstore"
)

// dockerOrSkip makes sure the engine answers and returns the static check
// binary the containers run, by internal/dockertest's rule: skipped under
// -short, and without an engine, except under CI=true, where they run or
// fail.
func dockerOrSkip(t *testing.T) string {
	t.Helper()
	dockertest.Engine(t, engine.Connect)
	return dockertest.CheckBinary(t)
}

func dockerConfig(t *testing.T, backend, fencing string, nemesis ...string) Config {
	return Config{
		Backend: backend, Cluster: "docker", Nodes: 3, Fencing: fencing, Nemesis: nemesis, Clients: 5, Keys: 1,
		TimeLimit: 15 * time.Second, LeaseTTL: 2 * time.Second, Work: 10 * time.Millisecond,
		NemesisInterval: 3 * time.Second, CheckTimeout: 2 * time.Minute, Store: t.TempDir(),
		AgentBinary: dockerOrSkip(t),
	}
}

// sharedClusters hands a finished test's cluster on, warm, to the next
// test of this process that needs the same containers (harness.Clusters:
// every process the last run started killed, every directory it wrote
// emptied, the servers started from nothing), so the known answers of
// one backend pay for their containers once, not per test. It keeps one
// cluster idle: the tests of a backend stand together in their files. A
// run that asks for a new cluster (power layer, clock faults, a server
// image, FreshCluster) gets its own, as on the command line.
//
// It keeps two: a backend's tests alternate between two shapes of
// cluster (Redis with one master and Redlock's five, Kubernetes with one
// API server and three, etcd as the storage of PostgreSQL's tests), and
// with one kept each switch made a new cluster of 9 to 30 s. Replaying
// the first stream's 65 runs of CI's of 2026-12-07 by the shape of their
// clusters (servers, clients, image: close to, not quite, the warm key),
// one kept found its shape 32 times, two 52 times, three 55.
var sharedClusters = NewClustersUpTo(2)

// sharedTestIDs are the test ids of the runs that used sharedClusters:
// once it is closed, nothing of theirs may be left (closeSharedClusters).
var sharedTestIDs []string

// closeSharedClusters removes the cluster kept idle and fails the test
// process if any run through runDocker left something behind. TestMain
// calls it after the last test.
func closeSharedClusters() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := sharedClusters.Close(ctx); err != nil {
		return fmt.Errorf("removing the clusters the tests shared: %w", err)
	}
	if len(sharedTestIDs) == 0 {
		return nil
	}
	cli, err := engine.Connect(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	var left []string
	for _, id := range sharedTestIDs {
		objs, err := engine.List(ctx, cli, id)
		if err != nil {
			return err
		}
		for _, l := range objs {
			left = append(left, l.String())
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("the Docker tests left behind: %s", strings.Join(left, "; "))
	}
	return nil
}

// runDocker runs cfg on a cluster shared with the tests before it where
// one is warm (sharedClusters), and checks that its servers said what
// they are; what it leaves is checked once the tests are all done.
func runDocker(t *testing.T, cfg Config) *RunResult {
	t.Helper()
	out := runDockerCleaned(t, cfg)
	checkServers(t, cfg, out)
	return out
}

// runDockerCleaned runs cfg as runDocker does, and checks its servers'
// logs were kept; for a run whose servers may never answer again (a
// service that cannot restart after a power cut).
func runDockerCleaned(t *testing.T, cfg Config) *RunResult {
	t.Helper()
	out, err := runDockerMayFail(t, cfg)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return out
}

// runDockerMayFail is runDockerCleaned for a run that may not be carried
// out (its error is returned with its outcome): a server that never
// restarts after a power cut fails the fault's heal. A run that was not
// carried out keeps no cluster warm (harness.Clusters).
func runDockerMayFail(t *testing.T, cfg Config) (*RunResult, error) {
	t.Helper()
	out, runErr := runWith(quiet(), cfg, testWriter{t}, &runState{clusters: sharedClusters})
	if out == nil {
		t.Fatalf("run: %v", runErr)
	}
	if out.TestID == "" {
		t.Fatal("the outcome does not name its Docker test id")
	}
	sharedTestIDs = append(sharedTestIDs, out.TestID)
	t.Logf("docker cluster: %s", paramValue(out, "docker cluster"))
	if _, err := os.Stat(filepath.Join(out.Dir, "logs")); err != nil {
		t.Errorf("no server logs collected: %v", err)
	}
	return out, runErr
}

// checkServers: every Docker run asked its servers what they are, once
// per server node, and at least one answered in the backend's terms — with
// the build asked for, when a test asked for one (a series' release, or
// exactly the release asked for; the server's own answer, not the flag).
// A node that did not answer is only logged: under load a just-resumed
// node may stay silent, and that must never fail a run.
func checkServers(t *testing.T, cfg Config, out *RunResult) {
	t.Helper()
	sv := out.Report.Servers
	if sv == nil {
		t.Errorf("the run did not record what its servers are")
		return
	}
	t.Logf("servers: %s", sv.Summary)
	b, _ := registry.Lookup(cfg.Backend)
	if !strings.HasPrefix(sv.Summary, b.Server+" ") {
		t.Errorf("servers summary %q does not name %s", sv.Summary, b.Server)
	}
	answered := 0
	for i, n := range sv.Nodes {
		if want := fmt.Sprintf("n%d", i+1); n.Node != want {
			t.Errorf("servers: node %d is %q, want %s", i, n.Node, want)
		}
		if n.Version == reports.UnknownVersion {
			t.Logf("%s did not answer: %s", n.Node, n.Error)
			continue
		}
		answered++
		if n.Answer == "" || n.Version == "" {
			t.Errorf("%s: version %q, answer %q", n.Node, n.Version, n.Answer)
		}
		if cfg.ServerVersion != "" && n.Version != cfg.ServerVersion && !strings.HasPrefix(n.Version, cfg.ServerVersion+".") {
			t.Errorf("%s: asked for %s, the server says it is %q (%s)", n.Node, cfg.ServerVersion, n.Version, n.Answer)
		}
	}
	if len(sv.Nodes) == 0 || answered == 0 {
		t.Errorf("no server said what it is: %+v", sv)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func wantDocker(t *testing.T, out *RunResult, want models.Verdict) {
	t.Helper()
	if out.Result.Verdict != want {
		t.Fatalf("verdict %s, want %s: %s (store %s)", out.Result.Verdict, want, out.Result.Explanation, out.Dir)
	}
}

func TestDockerMemoryBackendReproducesTheSeed(t *testing.T) {
	out := runDocker(t, dockerConfig(t, "memory", "none", "pause-holder"))
	wantDocker(t, out, models.Invalid)
	if !strings.Contains(out.Result.Explanation, "stale lease holder's write was accepted") {
		t.Errorf("explanation: %s", out.Result.Explanation)
	}
	wantDocker(t, runDocker(t, dockerConfig(t, "memory", "all", "pause-holder")), models.Valid)
}

func TestDockerEtcdCleanRunIsValid(t *testing.T) {
	cfg := dockerConfig(t, "etcd", "none", "none")
	cfg.TimeLimit = 8 * time.Second
	cfg.Keys = 2
	wantDocker(t, runDocker(t, cfg), models.Valid)
}

func TestDockerEtcdUnfencedLeaseUnderHolderPauseIsInvalid(t *testing.T) {
	out := runDocker(t, dockerConfig(t, "etcd", "none", "pause-holder"))
	wantDocker(t, out, models.Invalid)
	if !strings.Contains(out.Result.Explanation, "stale lease holder's write was accepted") {
		t.Errorf("explanation does not name the stale write: %s", out.Result.Explanation)
	}
	// The verdict says how many of its exposures the storage admitted.
	x := out.Result.Exposures
	if x == nil || x.Admitted < 1 || x.Admitted > x.Exposures {
		t.Fatalf("exposures %+v: want at least one admitted", x)
	}
	if line, want := reports.VerdictLine(out.Result), fmt.Sprintf("(%d of %d exposure", x.Admitted, x.Exposures); !strings.Contains(line, want) {
		t.Errorf("verdict line %q does not say %q", line, want)
	}
}

// Every frozen holder's late op reached the storage and was refused, and
// the verdict, results.json and the summary say so, with the bound.
func TestDockerEtcdFencedLeaseUnderHolderPauseIsValid(t *testing.T) {
	out := runDocker(t, dockerConfig(t, "etcd", "all", "pause-holder"))
	wantDocker(t, out, models.Valid)
	x := out.Result.Exposures
	if x == nil || x.Exposures == 0 || x.Refused != x.Exposures || x.Admitted != 0 {
		t.Fatalf("exposures %+v: want some, every one refused", x)
	}
	if line := reports.VerdictLine(out.Result); !strings.HasPrefix(line, "VALID: ") || !strings.Contains(line, "refused") {
		t.Errorf("verdict line %q does not say the late ops were refused", line)
	}
	res, err := reports.ReadResults(filepath.Join(out.Dir, runstore.ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	if res.Exposures == nil || res.Exposures.ExposureCounts != x.ExposureCounts || len(res.Exposures.List) != min(x.Exposures, models.MaxListedExposures) {
		t.Errorf("results.json's exposures %+v differ from the run's %+v", res.Exposures, x)
	}
	var sum strings.Builder
	reports.Summary(&sum, out.Report)
	if want := fmt.Sprintf("0 of %d admitted: at most ", x.Decided()); !strings.Contains(sum.String(), want) {
		t.Errorf("the summary does not print the bound %q:\n%s", want, sum.String())
	}
}

// etcd's own recommendation: the resource in etcd, every write a
// transaction guarded by the lock's ownership.
func TestDockerEtcdGuardedTransactionUnderHolderPauseIsValid(t *testing.T) {
	cfg := dockerConfig(t, "etcd", "none", "pause-holder")
	cfg.Storage = "etcd"
	out := runDocker(t, cfg)
	wantDocker(t, out, models.Valid)
}

// An interrupt while a client container is frozen: the run heals, keeps
// its history, checks what was recorded, and leaves no container behind;
// an interrupt during setup leaves nothing behind either.
func TestDockerInterruptHealsAndTearsDown(t *testing.T) {
	for _, at := range []time.Duration{1500 * time.Millisecond, 7 * time.Second} {
		cfg := dockerConfig(t, "memory", "none", "pause-holder")
		cfg.TimeLimit = time.Minute
		cfg.PauseDuration = 30 * time.Second
		ctx, cancelList := context.WithTimeout(context.Background(), 2*time.Minute)
		cli, cerr := engine.Connect(ctx)
		if cerr != nil {
			t.Fatal(cerr)
		}
		st := &runState{testID: uniqueTestID("memory")}
		stop, cancel := context.WithCancel(context.Background())
		// Timed from the start of the phase, not of the run: setup takes
		// longer on a loaded machine.
		phase := "setup"
		if at >= 3*time.Second {
			phase = "workload"
			at -= 2 * time.Second
		}
		st.phaseHook = func(p string) {
			if p == phase {
				time.AfterFunc(at, cancel)
			}
		}
		out, err := runWith(Signals{Stop: stop, Abort: context.Background()}, cfg, testWriter{t}, st)
		cancel()
		left, _ := engine.List(ctx, cli, st.testID)
		for _, l := range left {
			t.Errorf("interrupt in the %s left behind: %s", phase, l)
		}
		engine.DownAll(ctx, cli, st.testID)
		cli.Close()
		cancelList()
		if phase == "setup" {
			// During setup: the run could not be carried out.
			if err == nil && !out.Interrupted {
				t.Errorf("interrupt during setup: no error and not interrupted")
			}
			continue
		}
		if err != nil {
			t.Fatalf("interrupt during the workload: %v", err)
		}
		if !out.Interrupted {
			t.Error("the outcome does not say it was interrupted")
		}
		if _, err := os.Stat(filepath.Join(out.Dir, "history.jsonl")); err != nil {
			t.Error(err)
		}
		// Unfenced: a stale write may already have been found (invalid
		// stands); if not, a run cut short is unknown, never valid.
		if out.Result.Verdict == models.Valid {
			t.Errorf("a run interrupted %s into its minute is valid", at)
		}
		t.Logf("interrupted in the workload: %s (%s)", out.Result.Verdict, out.Result.Explanation)
	}
}

// A leader kill and a majorities-ring partition with fencing all: valid,
// and the cluster recovers so that the final reads succeed.
func TestDockerEtcdFencedUnderLeaderKillAndRingIsValidAndRecovers(t *testing.T) {
	cfg := dockerConfig(t, "etcd", "all", "kill-leader", "partition-ring")
	cfg.TimeLimit = 25 * time.Second
	out := runDocker(t, cfg)
	wantDocker(t, out, models.Valid)
	_, events := faultsInjected(t, out)
	ops, _ := history.Pair(events)
	last := ops[len(ops)-2] // the final read, before its release
	if last.F != history.Read || last.Type != history.OK {
		t.Fatalf("the final read did not succeed after healing: %+v", last)
	}
}

// faultsInjected counts the faults the run's history says were injected,
// by name, failing the test when there were none.
func faultsInjected(t *testing.T, out *RunResult) (map[string]int, []history.Event) {
	t.Helper()
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	faults := map[string]int{}
	for _, e := range events {
		if e.IsNemesis() && e.Type == history.Invoke {
			faults[e.F]++
		}
	}
	if len(faults) == 0 {
		t.Fatalf("no fault took effect")
	}
	t.Logf("faults injected: %v", faults)
	return faults, events
}
