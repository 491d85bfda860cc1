package harness

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// An interrupt at each phase of a Docker run (the memory backend: the
// backend does not matter here), at the start of the phase, or in the
// workload while a client container is frozen: the run ends, nothing
// stays paused, the history is whole, results.json has the right verdict
// (unknown when the setup, the workload or the final reads were cut short
// or the check skipped), and the
// cluster is removed (or, with --keep-cluster, left up and healed).
func TestDockerInterruptAtEveryPhase(t *testing.T) {
	cases := []struct {
		phase   string
		abort   bool
		keep    bool
		wantErr string
		verdict models.Verdict
	}{
		{phase: "image", wantErr: "interrupted during setup", verdict: models.Unknown},
		{phase: "cluster", wantErr: "interrupted during setup", verdict: models.Unknown},
		{phase: "servers", wantErr: "interrupted during setup", verdict: models.Unknown},
		// "paused": in the workload, once a client container is frozen.
		// Cut short before the time limit or the final reads: unknown.
		{phase: "paused", keep: true, verdict: models.Unknown},
		{phase: "final reads", verdict: models.Unknown},
		{phase: "check", abort: true, verdict: models.Unknown},
		{phase: "report", abort: true, verdict: models.Valid},
	}
	bin := dockerOrSkip(t)
	ctx := context.Background()
	cli, err := engine.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	for _, c := range cases {
		name := strings.ReplaceAll(c.phase, " ", "-")
		t.Run(name, func(t *testing.T) {
			cfg := dockerConfig(t, "memory", "all", "pause")
			cfg.AgentBinary = bin
			cfg.Clients = 2
			cfg.TimeLimit = 4 * time.Second
			cfg.NemesisInterval = time.Second
			cfg.PauseDuration = 30 * time.Second // frozen until healed
			cfg.KeepCluster = c.keep
			at := c.phase
			if at == "paused" {
				at = "workload"
			}
			in := newInterrupter(at, 0, c.abort)
			defer in.close()
			testID := uniqueTestID("memory")
			st := &runState{testID: testID}
			st.phaseHook = func(p string) {
				if c.phase != "paused" || p != "workload" {
					in.hook(p)
					return
				}
				// Interrupt once the nemesis has frozen a client.
				in.mu.Lock()
				in.seen = append(in.seen, p)
				in.mu.Unlock()
				go func() {
					for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
						objs, _ := engine.List(ctx, cli, testID)
						for _, o := range objs {
							if o.State == "paused" {
								t.Logf("%s paused: interrupting", o.Name)
								in.hook("workload")
								return
							}
						}
					}
				}()
			}
			began := time.Now()
			out, runErr := runWith(in.signals(), cfg, testWriter{t}, st)
			took := time.Since(began)
			if out == nil {
				t.Fatalf("no outcome: %v", runErr)
			}
			defer engine.DownAll(context.Background(), cli, out.TestID)
			if in.firedAt().IsZero() {
				t.Fatalf("the run never reached %s: %v (error %v)", c.phase, in.phases(), runErr)
			}
			switch {
			case c.wantErr == "" && runErr != nil:
				t.Fatalf("interrupt at %s: %v", c.phase, runErr)
			case c.wantErr != "" && (runErr == nil || !strings.Contains(runErr.Error(), c.wantErr)):
				t.Fatalf("interrupt at %s: error %v, want %q", c.phase, runErr, c.wantErr)
			}
			events := checkStore(t, out, runErr)
			if out.Result.Verdict != c.verdict {
				t.Errorf("verdict %s (%s), want %s", out.Result.Verdict, out.Result.Explanation, c.verdict)
			}
			if want := c.phase != "report"; out.Interrupted != want {
				t.Errorf("interrupted %v, want %v", out.Interrupted, want)
			}
			left, err := engine.List(ctx, cli, out.TestID)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range left {
				if l.State == "paused" {
					t.Errorf("left paused: %s", l)
				}
				if !c.keep {
					t.Errorf("left behind: %s", l)
				}
			}
			if c.keep {
				if len(left) == 0 {
					t.Error("--keep-cluster: the cluster is gone")
				}
				if err := engine.DownAll(ctx, cli, out.TestID); err != nil {
					t.Error(err)
				}
			}
			if c.phase == "paused" {
				froze := 0
				for _, e := range events {
					if e.IsNemesis() && e.F == "pause" && e.Type == history.Invoke {
						froze++
					}
				}
				if froze == 0 {
					t.Error("no pause in the history")
				}
			}
			t.Logf("interrupt at %s: %s in %s, %d events, phases %v", c.phase, out.Result.Verdict, took.Round(time.Millisecond), len(events), in.phases())
		})
	}
}

// uniqueTestID is a Docker test id no other run has.
func uniqueTestID(prefix string) string {
	return fmt.Sprintf("%s-it-%d", prefix, time.Now().UnixNano()%1e9)
}
