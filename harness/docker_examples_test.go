package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/models"
)

// The example clients over third-party lock libraries (examples/clients/)
// under pause-holder, each frozen at its own write-checked checkpoint: the
// verdicts expected of them (invalid unfenced, valid fenced; tokenless
// Redis invalid either way), and client-test accepting each. Lean: 10 s
// runs, and a library whose verdict does not depend on fencing runs once.

// exampleRun runs the example client name on backend with fencing under
// pause-holder and wants verdict.
func exampleRun(t *testing.T, name, backend, fencing string, want models.Verdict) {
	t.Helper()
	cfg := dockerConfig(t, backend, fencing, "pause-holder")
	cfg.ClientDir = "../examples/clients/" + name
	cfg.TimeLimit = 10 * time.Second
	// Not StopOnViolation: a violation found while a JVM still starts ends
	// the run with "did not start: context canceled" (harness, as merged).
	out := runDocker(t, cfg)
	wantDocker(t, out, want)
	if n := nemesisEvents(t, out, "pause-holder"); n == 0 {
		t.Errorf("%s, fencing %s: no pause-holder took effect", name, fencing)
	}
	if want == models.Invalid && !strings.Contains(out.Result.Explanation, "stale") &&
		!strings.Contains(out.Result.Explanation, "lost") {
		t.Errorf("%s, fencing %s: explanation names neither a stale write nor a lost update: %s", name, fencing, out.Result.Explanation)
	}
}

// exampleClientTest wants check client-test to accept the example client.
func exampleClientTest(t *testing.T, name, backend string) {
	t.Helper()
	var buf strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := Config{Backend: backend, ClientDir: "../examples/clients/" + name, AgentBinary: dockerOrSkip(t), Given: map[string]bool{}}
	if backend == "zookeeper" {
		cfg.Nodes = 3
	}
	failed, err := ClientTest(ctx, cfg, "", &buf)
	t.Log(buf.String())
	if err != nil || failed != 0 || !strings.Contains(buf.String(), "10 of 10 checks passed") {
		t.Fatalf("client-test %s: %d failed, %v", name, failed, err)
	}
}

// kazoo's Lock on ZooKeeper, the lock node's czxid as the token.
func TestDockerExampleKazoo(t *testing.T) {
	exampleClientTest(t, "kazoo", "zookeeper")
	exampleRun(t, "kazoo", "zookeeper", "none", models.Invalid)
	exampleRun(t, "kazoo", "zookeeper", "all", models.Valid)
}

// Curator's InterProcessMutex on ZooKeeper, the lock node's czxid as the
// token.
func TestDockerExampleCurator(t *testing.T) {
	exampleClientTest(t, "curator", "zookeeper")
	exampleRun(t, "curator", "zookeeper", "none", models.Invalid)
	exampleRun(t, "curator", "zookeeper", "all", models.Valid)
}

// redis-py's Lock has no token (0): fencing has nothing to compare, so
// even --fencing all is invalid (and so, a fortiori, is none: not run).
func TestDockerExampleRedisPy(t *testing.T) {
	exampleClientTest(t, "redis-py", "redis")
	exampleRun(t, "redis-py", "redis", "all", models.Invalid)
}

// client-go's leader election (LeaseLock) on Kubernetes, the Lease's
// leaseTransitions + 1 as the token: client-test accepts it, given the
// API server's URL, token and certificate in init; and, like the
// built-in recipe, a leader frozen after its last IsLeader() writes late,
// accepted unfenced. Fenced is not run here: the token is the built-in
// recipe's, whose fenced run TestDockerKubernetesFenced… makes. The run
// goes first: it builds the client image (a 40 MB binary, over 1.5 min on
// a loaded machine) outside client-test's 3 min bound.
func TestDockerExampleClientGo(t *testing.T) {
	exampleRun(t, "client-go", "kubernetes", "none", models.Invalid)
	exampleClientTest(t, "client-go", "kubernetes")
}
