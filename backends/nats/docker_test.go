package nats_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/fencecheck/fencecheck/backends/all"
	"github.com/fencecheck/fencecheck/backends/nats"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/dockertest"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/models"
)

// The known answers of a lock in a JetStream bucket, on one warm cluster
// (one cluster made, three runs): the bucket's TTL expires a frozen
// holder's key and the next Create takes the lock, so the frozen holder's
// late write lands unless the storage fences it by the revision; and a
// holder cut off from the servers, writing on after its lease has passed
// to another, is refused by the fence.
func TestDockerNatsKnownAnswers(t *testing.T) {
	// One cluster made, three short runs on it, and one on a cluster of
	// the node image for Debian's build (about a minute more); the
	// nats-server compile comes from the cache (`check image build --all`
	// made it). Its budget is in internal/dockertest/budgets.go.
	dockertest.Engine(t, engine.Connect)
	agent := dockertest.CheckBinary(t)
	clusters := harness.NewClustersUpTo(1)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := clusters.Close(ctx); err != nil {
			t.Errorf("removing the warm cluster: %v", err)
		}
	})
	config := func(t *testing.T, fencing, nemesis string) harness.Config {
		return harness.Config{
			Backend: nats.Name, Cluster: "docker", Nodes: 3, Fencing: fencing, Nemesis: []string{nemesis}, Clients: 5, Keys: 1,
			TimeLimit: 10 * time.Second, LeaseTTL: 2 * time.Second, Work: 10 * time.Millisecond,
			NemesisInterval: 3 * time.Second, CheckTimeout: 2 * time.Minute, Store: t.TempDir(),
			AgentBinary: agent,
		}
	}
	run := func(t *testing.T, cfg harness.Config) (*harness.RunResult, []history.Event) {
		t.Helper()
		start := time.Now()
		out, err := clusters.Run(harness.Signals{Stop: context.Background(), Abort: context.Background()}, cfg, dockertest.LogWriter(t))
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		t.Logf("%s: %s in %s", out.Dir, out.Result.Verdict, time.Since(start).Round(time.Second))
		if sv := out.Report.Servers; sv == nil || !strings.HasPrefix(sv.Summary, "nats-server 2.") {
			t.Errorf("the servers' versions were not recorded: %+v", sv)
		}
		events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return out, events
	}
	t.Run("unfenced-pause-holder-invalid", func(t *testing.T) {
		out, _ := run(t, config(t, "none", "pause-holder"))
		if out.Result.Verdict != models.Invalid {
			t.Fatalf("verdict %s (%s), want invalid: a frozen holder's late write must land without a fence", out.Result.Verdict, out.Result.Explanation)
		}
		if !strings.Contains(out.Result.Explanation, "stale lease holder's write was accepted") {
			t.Errorf("explanation does not name the stale write: %s", out.Result.Explanation)
		}
	})
	t.Run("fenced-pause-holder-valid", func(t *testing.T) {
		out, events := run(t, config(t, "all", "pause-holder"))
		if out.Result.Verdict != models.Valid {
			t.Fatalf("verdict %s (%s), want valid", out.Result.Verdict, out.Result.Explanation)
		}
		if n := count(events, lockclient.ErrorFenced); n == 0 {
			t.Errorf("no late write was refused by the fence: the pauses proved nothing")
		}
	})
	// Debian's 2.9.10 from the node image: the build no other test starts
	// (its own binary path, no copy, its own cluster on the node image).
	t.Run("debian-2.9-fenced-pause-holder-valid", func(t *testing.T) {
		cfg := config(t, "all", "pause-holder")
		cfg.ServerVersion = nats.VersionDebian
		out, events := run(t, cfg)
		if out.Result.Verdict != models.Valid {
			t.Fatalf("verdict %s (%s), want valid", out.Result.Verdict, out.Result.Explanation)
		}
		if sv := out.Report.Servers; sv == nil || !strings.Contains(sv.Summary, nats.DebianVersion) {
			t.Errorf("servers %+v, want Debian's nats-server %s", sv, nats.DebianVersion)
		}
		if n := count(events, lockclient.ErrorFenced); n == 0 {
			t.Errorf("no late write was refused by the fence: the pauses proved nothing")
		}
	})
	t.Run("fenced-partition-client-valid", func(t *testing.T) {
		cfg := config(t, "all", "partition-client")
		// The client that trusts its grant, working three leases in its
		// critical section: the cut lands while it holds the lock (the
		// fault takes a moment to apply), its renewals fail, another
		// client takes the lock, and its write arrives late. The careful
		// client would stop at its failed renewal, leaving the fence
		// nothing to refuse (a verdict of unknown: no exposure).
		cfg.LeaseCheck = registry.LeaseCheckNone
		cfg.Work = 3 * cfg.LeaseTTL
		cfg.PauseDuration = 3 * cfg.LeaseTTL
		cfg.TimeLimit = 20 * time.Second
		out, events := run(t, cfg)
		if out.Result.Verdict != models.Valid {
			t.Fatalf("verdict %s (%s), want valid", out.Result.Verdict, out.Result.Explanation)
		}
		if !faulted(events, "partition-client") {
			t.Errorf("no partition-client took effect")
		}
		if n := count(events, lockclient.ErrorFenced); n == 0 {
			t.Errorf("no late write of a cut-off holder was refused by the fence")
		}
	})
}

// count is how many client ops failed with the error text.
func count(events []history.Event, text string) int {
	n := 0
	for _, e := range events {
		if !e.IsNemesis() && e.Type == history.Fail && e.Error == text {
			n++
		}
	}
	return n
}

// faulted says whether fault f hit a node at least once.
func faulted(events []history.Event, f string) bool {
	_, faults := history.Pair(events)
	for _, fl := range faults {
		if fl.F == f && len(fl.Nodes) > 0 && fl.Error == "" {
			return true
		}
	}
	return false
}
