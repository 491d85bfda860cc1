package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// The fixture packages under testdata, run by the real `go test -json`
// with a 3-second -timeout: a test that hangs (hang), one whose goroutine
// panics (gopanic), one whose process is killed (killed), a skipped
// subtest (skip) and a passing test (pass). go vet and `go test ./...`
// never see them (testdata is left out of ./...).
var fixtures = []string{"hang", "gopanic", "killed", "skip", "pass"}

var fixtureRun struct {
	once sync.Once
	out  string
	err  error
}

// fixtureEvents is go test's -json output for every fixture package, run
// once for all the tests here (a few seconds: five tiny test binaries and
// the hang's 3 s).
func fixtureEvents(t *testing.T) string {
	t.Helper()
	fixtureRun.once.Do(func() {
		args := []string{"test", "-json", "-count=1", "-timeout=3s"}
		for _, f := range fixtures {
			args = append(args, "./testdata/"+f)
		}
		cmd := exec.Command("go", args...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		fixtureRun.out = string(out)
		var exit *exec.ExitError
		switch {
		case err == nil:
			fixtureRun.err = errors.New("go test passed fixtures made to fail")
		case !errors.As(err, &exit):
			fixtureRun.err = err
		case !strings.Contains(fixtureRun.out, `"Action":"start"`):
			fixtureRun.err = errors.New("go test ran none of the fixtures: " + stderr.String())
		}
	})
	if fixtureRun.err != nil {
		t.Fatalf("go test -json on the fixtures: %v\n%s", fixtureRun.err, fixtureRun.out)
	}
	return fixtureRun.out
}

// eventsOf keeps the events of the fixture packages named.
func eventsOf(events string, fixtures ...string) string {
	var kept []string
	for _, l := range strings.SplitAfter(events, "\n") {
		for _, f := range fixtures {
			if strings.Contains(l, `"Package":"github.com/fencecheck/fencecheck/scripts/testsummary/testdata/`+f+`"`) {
				kept = append(kept, l)
			}
		}
	}
	return strings.Join(kept, "")
}

// lastLines is the last n lines of out.
func lastLines(out string, n int) string {
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// CI's output ends with the summary: each cause must be in its last 20
// lines, and the run red.
func TestRealFailuresAreNamedInTheLast20Lines(t *testing.T) {
	out, green := summaryAndVerdict(t, fixtureEvents(t), true)
	if green {
		t.Errorf("a run with a hang, a panic, a kill and a skip under CI=true was found green:\n%s", out)
	}
	tail := lastLines(out, 20)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`testdata/hang TestHangs/waiting: did not finish \(ran [0-9.]+s\): its test process ended: panic: test timed out after 3s`),
		regexp.MustCompile(`testdata/hang TestHangs: did not finish \(ran [0-9.]+s\): its test process ended: panic: test timed out after 3s`),
		regexp.MustCompile(`testdata/gopanic TestPanicsInAGoroutine: did not finish \(ran [0-9.]+m?s\): its test process ended: panic: the goroutine found nil where a lease should be`),
		regexp.MustCompile(`testdata/killed TestKilledMidway: did not finish \(ran [0-9.]+m?s\): its test process ended: signal: killed`),
		regexp.MustCompile(`testdata/skip TestWithASkippedSubtest/needs-a-thing: skipped, and under CI=true no test may skip .*: skip_test.go:\d+: the thing is unavailable here`),
	} {
		if !want.MatchString(tail) {
			t.Errorf("the last 20 lines lack %s:\n%s", want, tail)
		}
	}
	if !strings.HasSuffix(out, "\ntests: 4 passed, 5 failed, 0 skipped\n") {
		t.Errorf("closing line not last, or wrong (TestQuick, TestPasses, the skip's parent and its other subtest passed; TestHangs, its subtest, the panic, the kill and the skip failed):\n%s", lastLines(out, 3))
	}
}

// A hung test's block in the log: the last lines of its own output, then
// once its process's last words, with go test's "running tests" list and
// the goroutines.
func TestARealHangShowsItsOutputAndItsProcesssLastWords(t *testing.T) {
	out, _ := summaryAndVerdict(t, eventsOf(fixtureEvents(t), "hang"), false)
	for _, want := range []string{
		"=== scripts/testsummary/testdata/hang TestHangs/waiting did not finish: it ran",
		"hang_test.go:15: waiting for an answer that never comes\n",
		"=== how scripts/testsummary/testdata/hang's test process ended:\npanic: test timed out after 3s\n",
		"running tests:",
		"goroutine ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the summary lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "\tTestHangs/waiting (3s)\n"); n != 1 {
		t.Errorf("the process's last words are printed %d times, want once:\n%s", n, out)
	}
}

// Outside CI a skip is counted and listed with its reason, subtests too,
// and does not make the run red.
func TestARealSkippedSubtestIsCountedOutsideCI(t *testing.T) {
	out, green := summaryAndVerdict(t, eventsOf(fixtureEvents(t), "skip", "pass"), false)
	if !green {
		t.Errorf("a skip outside CI made the run red:\n%s", out)
	}
	if !strings.Contains(out, "== 1 skipped tests and why\n  scripts/testsummary/testdata/skip TestWithASkippedSubtest/needs-a-thing: skip_test.go:8: the thing is unavailable here\n") {
		t.Errorf("the skipped subtest is not listed with its reason:\n%s", out)
	}
	if !strings.HasSuffix(out, "\ntests: 3 passed, 0 failed, 1 skipped\n") {
		t.Errorf("closing line wrong:\n%s", lastLines(out, 3))
	}
}

// Input that ends while tests run (go test killed, its stream cut) names
// them: here, the real hang's events up to its subtest's last line.
func TestInputEndingMidTestNamesTheTest(t *testing.T) {
	events := eventsOf(fixtureEvents(t), "hang")
	cut := strings.Index(events, "waiting for an answer that never comes")
	if cut < 0 {
		t.Fatalf("the hang's events lack its subtest's line:\n%s", events)
	}
	events = events[:cut+strings.Index(events[cut:], "\n")+1]
	out, green := summaryAndVerdict(t, events, true)
	if green {
		t.Errorf("a stream cut mid-test was found green:\n%s", out)
	}
	tail := lastLines(out, 20)
	for _, want := range []string{
		"testdata/hang TestHangs/waiting: did not finish (ran ",
		"): the input ended while it ran (go test killed, or its stream cut)",
		"testdata/hang TestHangs: did not finish",
	} {
		if !strings.Contains(tail, want) {
			t.Errorf("the last 20 lines lack %q:\n%s", want, tail)
		}
	}
	if !strings.HasSuffix(out, "\ntests: 1 passed, 2 failed, 0 skipped\n") {
		t.Errorf("closing line wrong:\n%s", lastLines(out, 3))
	}
}

// The times file lists every test and subtest with its package, time,
// outcome and budget.
func TestTimesFileListsEveryTest(t *testing.T) {
	path := filepath.Join(t.TempDir(), "times.tsv")
	var out, errs strings.Builder
	summarize(strings.NewReader(fixtureEvents(t)), &out, &errs, true, path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^package\ttest\tseconds\toutcome\tbudget_seconds$`),
		regexp.MustCompile(`(?m)^scripts/testsummary/testdata/hang\tTestHangs/waiting\t[0-9.]+\tunfinished\t-$`),
		regexp.MustCompile(`(?m)^scripts/testsummary/testdata/hang\tTestQuick\t[0-9.]+\tpass\t-$`),
		regexp.MustCompile(`(?m)^scripts/testsummary/testdata/skip\tTestWithASkippedSubtest/needs-a-thing\t[0-9.]+\tskip\t-$`),
		regexp.MustCompile(`(?m)^scripts/testsummary/testdata/killed\tTestKilledMidway\t[0-9.]+\tunfinished\t-$`),
	} {
		if !want.MatchString(got) {
			t.Errorf("the times file lacks %s:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "\n"); n != 1+9 {
		t.Errorf("the times file has %d lines, want a header and the 9 tests and subtests:\n%s", n, got)
	}
	if !strings.Contains(out.String(), "every test's time: "+path) {
		t.Errorf("the summary does not say where the times are:\n%s", out.String())
	}
}
