package harness

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/postgres"
	"github.com/fencecheck/fencecheck/backends/redis"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

// The clock faults' known answers, kept lean (four short runs):
// Kleppmann's case against Redlock — a client holding a bare majority of
// five masters, one of whose clocks jumps — lets two clients hold the lock
// and loses an update; the PostgreSQL lease, timed by the server's
// clock_timestamp(), breaks the same way under a jump, and fencing tokens
// save it. Each run's log must show the server's own clock moved.
func TestDockerClockFaultsKnownAnswers(t *testing.T) {
	t.Run("redlock-kleppmann", func(t *testing.T) {
		cfg := dockerConfig(t, "redis", "none", "clock-jump-quorum")
		cfg.Recipe = redis.Redlock
		cfg.Work = time.Second
		cfg.TimeLimit = 25 * time.Second
		cfg.StopOnViolation = true
		out := runDocker(t, cfg)
		wantDocker(t, out, models.Invalid)
		if d := readDamage(t, out); d.Overlaps == 0 {
			t.Errorf("no two holders at once: %s", d.Text())
		}
		story := storyText(t, out)
		if !regexp.MustCompile(`clock-jump-quorum on c\d, n\d cut from c\d, n\d cut from c\d, n\d clock \+6\.000 s`).MatchString(story) {
			t.Errorf("the story does not name the cut slot, its cut masters and the jumped master:\n%s", story)
		}
		wantClockMoved(t, out, "Redis TIME")
	})
	// The same steps with redsync, the Go reference implementation of
	// Redlock, as a --client program asking for five masters.
	t.Run("redsync-kleppmann", func(t *testing.T) {
		cfg := dockerConfig(t, "redis", "none", "clock-jump-quorum")
		cfg.ClientDir = "../examples/clients/redsync"
		cfg.Nodes = 5
		cfg.Given = map[string]bool{"nodes": true}
		cfg.Work = time.Second
		cfg.TimeLimit = 25 * time.Second
		cfg.StopOnViolation = true
		out := runDocker(t, cfg)
		wantDocker(t, out, models.Invalid)
		if d := readDamage(t, out); d.Overlaps == 0 {
			t.Errorf("no two holders at once: %s", d.Text())
		}
		wantClockMoved(t, out, "Redis TIME")
	})
	for _, fencing := range []string{"none", "all"} {
		t.Run("postgres-lease-"+fencing, func(t *testing.T) {
			cfg := dockerConfig(t, "postgres", fencing, "clock-jump")
			cfg.Recipe = postgres.RecipeLease
			cfg.Work = time.Second
			cfg.TimeLimit = 15 * time.Second
			cfg.StopOnViolation = true
			out := runDocker(t, cfg)
			if fencing == "none" {
				wantDocker(t, out, models.Invalid)
			} else {
				wantDocker(t, out, models.Valid)
				if fencedOps(t, out) == 0 {
					t.Error("valid with no stale op fenced: the jump took no lease over")
				}
			}
			wantClockMoved(t, out, "PostgreSQL clock_timestamp()")
		})
	}
}

// storyText is every invalid key's story, one step a line.
func storyText(t *testing.T, out *RunResult) string {
	t.Helper()
	var b strings.Builder
	for i := range out.Result.Keys {
		for _, s := range reports.Story(out.Report, &out.Result.Keys[i]) {
			b.WriteString(s.Text + "\n")
		}
	}
	return b.String()
}

// wantClockMoved asks the run's log for a server clock read by what
// before the jump near true time and after it near +6 s.
func wantClockMoved(t *testing.T, out *RunResult, what string) {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(out.Dir, "check.log"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`clock moved by \+6\.000 s: server clock ([-+]\d+\.\d+) s from true time \(` + regexp.QuoteMeta(what) +
		`, [^)]*\) before, ([-+]\d+\.\d+) s from true time`)
	m := re.FindStringSubmatch(string(log))
	if m == nil {
		t.Fatalf("check.log has no reading of %s before and after a jump:\n%s", what, log)
	}
	before, err1 := strconv.ParseFloat(m[1], 64)
	after, err2 := strconv.ParseFloat(m[2], 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("unreadable clock readings %q, %q", m[1], m[2])
	}
	if before > 1 || before < -1 || after < 5 || after > 7 {
		t.Errorf("%s read %+.3f s before the jump and %+.3f s after, want about 0 and +6", what, before, after)
	}
}
