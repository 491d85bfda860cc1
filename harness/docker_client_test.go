package harness

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/models"
)

// The Go example (examples/clients/redislock, over bsm/redislock) runs in
// place of the built-in agent: Redis's lock has no token, so the holder
// frozen at its checkpoint writes after its lease ran out and the run is
// invalid; the run names the client. Then client-test accepts it, on a
// cluster of its own.
func TestDockerGoClientUnderHolderPause(t *testing.T) {
	cfg := dockerConfig(t, "redis", "none", "pause-holder")
	cfg.ClientDir = "../examples/clients/redislock"
	cfg.StopOnViolation = true
	out := runDocker(t, cfg)
	wantDocker(t, out, models.Invalid)
	if n := nemesisEvents(t, out, "pause-holder"); n == 0 {
		t.Error("no pause-holder took effect")
	}
	params := map[string]string{}
	for _, p := range out.Report.Params {
		params[p.Name] = p.Value
	}
	if params["client"] != "redislock" || len(params["client-hash"]) != 12 || !strings.Contains(out.Dir, "redis-redislock-fenced-none") {
		t.Errorf("the run does not name its client: params %v, dir %s", params, out.Dir)
	}

	var buf strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	failed, err := ClientTest(ctx, Config{Backend: "redis", ClientDir: cfg.ClientDir, AgentBinary: cfg.AgentBinary, Given: map[string]bool{}}, "", &buf)
	t.Log(buf.String())
	if err != nil || failed != 0 || !strings.Contains(buf.String(), "10 of 10 checks passed") {
		t.Fatalf("client-test: %d failed, %v", failed, err)
	}
}
