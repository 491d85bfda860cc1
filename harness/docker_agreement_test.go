package harness

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/runstore"
)

// A real three-member etcd, one member killed and restarted on the
// nemesis's schedule: at the end every member answers HashKV at one
// revision with the same hash, and the store's revision is at least the
// highest token (a lock key's create revision) the run acknowledged. The
// agreement is in results.json, the summary and the report.
func TestDockerAgreementEtcd(t *testing.T) {
	cfg := dockerConfig(t, "etcd", "all", "kill")
	cfg.TimeLimit = 10 * time.Second
	out := runDocker(t, cfg)
	if out.Result.Verdict == models.Invalid {
		t.Fatalf("verdict invalid: %s (store %s)", out.Result.Explanation, out.Dir)
	}
	a := out.Result.Agreement
	if a == nil {
		t.Fatalf("the servers were not asked what they hold (store %s)", out.Dir)
	}
	t.Logf("agreement: %s", a.Short())
	if a.Verdict != models.Valid || len(a.Members) != 3 || len(a.Diverged) != 0 {
		t.Fatalf("agreement %s, %d members, diverged %v: %s", a.Verdict, len(a.Members), a.Diverged, a.Explanation)
	}
	state := ""
	for _, m := range a.Members {
		if m.Error != "" {
			t.Fatalf("%s did not answer: %s", m.Node, m.Error)
		}
		if !strings.HasPrefix(m.State, "HashKV 0x") || (state != "" && m.State != state) {
			t.Errorf("%s holds %q (the first held %q)", m.Node, m.State, state)
		}
		state = m.State
	}
	if len(a.Counters) != 1 || a.Counters[0].Acknowledged == 0 || a.Counters[0].Value < a.Counters[0].Acknowledged {
		t.Fatalf("counters %+v: want the store's revision at least a token acknowledged", a.Counters)
	}
	b, err := os.ReadFile(runstore.Run(out.Dir).Results())
	if err != nil {
		t.Fatal(err)
	}
	var res reports.Results
	if err := json.Unmarshal(b, &res); err != nil || res.Agreement == nil || res.Agreement.Verdict != models.Valid {
		t.Errorf("results.json's agreement: %+v, %v", res.Agreement, err)
	}
	var sum strings.Builder
	reports.Summary(&sum, out.Report)
	if !strings.Contains(sum.String(), "  at the end: agree: n1, n2 and n3 hold the same state (HashKV 0x") {
		t.Errorf("the summary does not say the members agree:\n%s", sum.String())
	}
	html, err := os.ReadFile(runstore.Run(out.Dir).Report())
	if err != nil || !strings.Contains(string(html), `id="agreement"`) {
		t.Errorf("report.html has no agreement: %v", err)
	}
}

// NATS under power-loss-all with its default sync (an fsync every two
// minutes): every server loses the bucket's unsynced stream metadata and
// drops the stream, so nothing is granted after the cut. The run used to
// be valid for that; the service has lost every revision it handed out,
// and the agreement says so: invalid.
func TestDockerNatsPowerLossAllDefaultSyncIsInvalid(t *testing.T) {
	cfg := powerConfig(t, "nats", "power-loss-all")
	start := time.Now()
	out := runDocker(t, cfg)
	t.Logf("%s in %s: %s", out.Result.Verdict, time.Since(start).Round(time.Second), out.Result.Explanation)
	if n := nemesisEvents(t, out, "power-loss-all"); n == 0 {
		t.Fatalf("no power cut took effect (store %s)", out.Dir)
	}
	a := out.Result.Agreement
	if a == nil {
		t.Fatalf("the servers were not asked what they hold (store %s)", out.Dir)
	}
	wantDocker(t, out, models.Invalid)
	if a.Verdict != models.Invalid || len(a.Counters) != 1 || !a.Counters[0].WentBack || a.Counters[0].Acknowledged == 0 {
		t.Fatalf("agreement %s: %s; counters %+v", a.Verdict, a.Explanation, a.Counters)
	}
}
