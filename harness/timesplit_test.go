package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The split adds up: each phase lasts until the next begins, the last
// until the end, and what was not the workload is said once.
func TestTimeSplitAddsUp(t *testing.T) {
	start := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	var m timeMarks
	for _, p := range []struct {
		name string
		at   time.Duration
	}{{"setup", 100 * time.Millisecond}, {"cluster", time.Second}, {"workload", 4 * time.Second}, {"heal", 14 * time.Second}, {"teardown", 15 * time.Second}} {
		m.markAt(p.name, start.Add(p.at))
	}
	got := m.split(start, start.Add(17*time.Second))
	want := "where the time went: 17.0 s in all, 7.0 s beyond the workload: open 0.1 s, setup 0.9 s, cluster 3.0 s, workload 10.0 s, heal 1.0 s, teardown 2.0 s"
	if got != want {
		t.Errorf("split\n%s\nwant\n%s", got, want)
	}
}

// A run's check.log ends with the split of its time.
func TestRunLogEndsWithItsTimeSplit(t *testing.T) {
	cfg := memoryConfig(t, "none", "none")
	out, err := Run(quiet(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(out.Dir, "check.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{"where the time went:", "beyond the workload", "setup ", "workload ", "final reads ", "check ", "report "} {
		if !strings.Contains(last, want) {
			t.Errorf("check.log's last line lacks %q: %s", want, last)
		}
	}
}
