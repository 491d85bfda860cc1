package harness

import (
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/reports"
)

// A custom client under a fault that takes every server down: an op in
// flight at the cut answers info, its process is retired, and the new
// process's client refuses, unable to connect (redislock pings Redis at
// init, as docs/client-protocol.md asks). Before, that refusal ended the
// workload ("the workload gave up early … did not start: it refused");
// now the slot's acquires open a client until the server is back
// (failed opens), and the run goes on to its time limit and its verdict,
// whatever that verdict is (redislock hands out no token).
func TestDockerCustomClientOutlivesAWholeClusterOutage(t *testing.T) {
	cfg := dockerConfig(t, "redis", "none", "power-loss-all")
	cfg.ClientDir = "../examples/clients/redislock"
	cfg.TimeLimit = 12 * time.Second
	cfg.NemesisInterval = 2 * time.Second
	start := time.Now()
	out := runDocker(t, cfg)
	r := out.Report
	if r == nil {
		t.Fatalf("no report: %s (store %s)", out.Result.Explanation, out.Dir)
	}
	n, secs := reports.FailedOpens(r.Ops)
	t.Logf("%s in %s: %s; %d failed opens, %.1f s", out.Result.Verdict, time.Since(start).Round(time.Second), out.Result.Explanation, n, secs)
	if r.Error != "" || out.Incomplete != "" || r.EndedBy != EndedByTimeLimit {
		t.Fatalf("the run did not go on to its time limit: error %q, incomplete %q, ended by %q (store %s)", r.Error, out.Incomplete, r.EndedBy, out.Dir)
	}
	if nemesisEvents(t, out, "power-loss-all") == 0 {
		t.Fatalf("no outage was made (store %s)", out.Dir)
	}
	if n == 0 {
		t.Fatalf("no replacement process failed to open during the outage: nothing was shown (store %s)", out.Dir)
	}
}
