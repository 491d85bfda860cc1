package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// A user's own fence check, in SQL: --client with --storage postgres runs a
// program (testdata/sqlclient: kazoo's Lock, psycopg2) that writes the
// table with its own statements, and fencecheck reads the final values
// itself. The known answers, under pause-holder: the
// conditional UPDATE (fence < token) that checks one row changed is valid;
// a SELECT of the fence before an UPDATE without the condition is invalid
// (the frozen holder passed its check before the freeze). Lean: 10 s runs,
// one client image layer of packages shared by all. The conditional UPDATE
// with its row count ignored is invalid too (below). The other variants
// were measured by real runs; docs/client-protocol.md has the commands and
// verdicts.

// sqlClient makes a client directory for variant of testdata/sqlclient.
func sqlClient(t *testing.T, variant string) string {
	t.Helper()
	src, err := os.ReadFile("testdata/sqlclient/client.py")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "pg-"+variant)
	manifest := fmt.Sprintf(`{"name": "pg-%s", "protocol": 1, "command": ["python3", "-u", "client.py", %q], "packages": ["python3-psycopg2", "python3-kazoo"]}`, variant, variant)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.py"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "fencecheck-client.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// sqlClientRun runs variant on ZooKeeper with --storage postgres under
// pause-holder.
func sqlClientRun(t *testing.T, variant string, stopOnViolation bool) *RunResult {
	t.Helper()
	cfg := dockerConfig(t, "zookeeper", "none", "pause-holder")
	cfg.Storage = "postgres"
	cfg.ClientDir = sqlClient(t, variant)
	cfg.TimeLimit = 10 * time.Second
	cfg.StopOnViolation = stopOnViolation
	out := runDocker(t, cfg)
	if n := nemesisEvents(t, out, "pause-holder"); n == 0 && variant != "ignoring-stop" {
		t.Errorf("%s: no pause-holder took effect", variant)
	}
	return out
}

// A client that ignores "stop" under pause-holder: the fault cannot aim
// at it. Whatever the exposures are, the verdict's words match them: with
// none, the run is unknown (pause-holder's default --min-exposures is 1)
// and says pause-holder froze no one; with some, it names them.
func TestDockerClientIgnoringStop(t *testing.T) {
	out := sqlClientRun(t, "ignoring-stop", false)
	x := out.Result.Exposures
	if x == nil {
		t.Fatal("the run's exposures were not counted")
	}
	t.Logf("%d pause-holder injections, exposures %+v, verdict %s: %s", nemesisEvents(t, out, "pause-holder"), x.ExposureCounts, out.Result.Verdict, reports.VerdictLine(out.Result))
	if !x.Exercised() {
		wantDocker(t, out, models.Unknown)
		if !strings.Contains(out.Result.Explanation, "fewer than --min-exposures 1") || !strings.Contains(out.Result.Explanation, "pause-holder froze no one") {
			t.Errorf("explanation does not say why the run could not tell: %s", out.Result.Explanation)
		}
		return
	}
	wantDocker(t, out, models.Valid)
	if line := reports.VerdictLine(out.Result); !strings.Contains(line, x.Text()) || x.Admitted != 0 {
		t.Errorf("verdict line %q does not carry the exposures %+v", line, x.ExposureCounts)
	}
}

func TestDockerClientSQLConditionalUpdate(t *testing.T) {
	out := sqlClientRun(t, "conditional", false)
	wantDocker(t, out, models.Valid)
	// The final read is fencecheck's own, and the writes reached the table.
	events, err := history.ParseFile(filepath.Join(out.Dir, "history.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var last *history.Event
	for i := range events {
		if e := &events[i]; e.F == history.Read && e.Type == history.OK {
			last = e
		}
	}
	if last == nil || last.Value == nil || *last.Value == 0 {
		t.Errorf("the final read found nothing written: %+v", last)
	}
}

func TestDockerClientSQLSelectThenUpdate(t *testing.T) {
	out := sqlClientRun(t, "select-then-update", true)
	wantDocker(t, out, models.Invalid)
	if !strings.Contains(out.Result.Explanation, "stale lease holder's write was accepted") {
		t.Errorf("explanation: %s", out.Result.Explanation)
	}
}

// The conditional UPDATE whose row count is ignored: the frozen holder's
// UPDATE changes nothing, yet the client answers ok. Invalid; the story
// names that write as acknowledged but never taking effect when a read
// with no write between shows it, and as a stale write accepted when the
// history cannot tell "never happened" from "overwritten at once"
// (docs/client-protocol.md).
func TestDockerClientSQLRowCountIgnored(t *testing.T) {
	out := sqlClientRun(t, "rowcount-ignored", false)
	wantDocker(t, out, models.Invalid)
	if e := out.Result.Explanation; !strings.Contains(e, "acknowledged but never took effect") && !strings.Contains(e, "stale lease holder's write was accepted") {
		t.Errorf("explanation names no write the client acknowledged: %s", e)
	}
}
