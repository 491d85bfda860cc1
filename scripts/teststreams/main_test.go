package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

const timesFile = `package	test	seconds	outcome	budget_seconds
harness	TestDockerA1	300.00	pass	480
harness	TestDockerA2	100.00	pass	480
harness	TestDockerA2/sub	90.00	pass	-
harness	TestDockerB	250.00	pass	480
harness	TestDockerC	120.00	pass	240
harness	TestDockerKube	200.00	pass	480
harness	TestUnit	0.10	pass	-
models	TestModel	20.00	pass	-
nemesis	TestDockerPause	80.00	pass	240
`

func writeTimes(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "times.tsv")
	if err := os.WriteFile(path, []byte(timesFile), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const testsIn = "a_test.go\tTestDockerA1\na_test.go\tTestDockerA2\nb_test.go\tTestDockerB\nc_test.go\tTestDockerC\nk_test.go\tTestDockerKube\nn_test.go\tTestDockerNew\n"

func TestEveryTestLandsInExactlyOneStreamAndFilesStayWhole(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		var out, log bytes.Buffer
		err := run(strings.NewReader(testsIn), &out, &log, options{
			timesPath: writeTimes(t), streams: n, late: "Kube", other: []string{"models", "nemesis"}, def: time.Minute,
		})
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != n-1 {
			t.Fatalf("%d streams: %d patterns printed, want %d:\n%s", n, len(lines), n-1, out.String())
		}
		seen := map[string]int{}
		for i, pat := range lines {
			re := regexp.MustCompile(pat)
			for _, name := range []string{"TestDockerA1", "TestDockerA2", "TestDockerB", "TestDockerC", "TestDockerKube", "TestDockerNew"} {
				if re.MatchString(name) {
					seen[name] = i + 2
				}
			}
		}
		if seen["TestDockerKube"] != 0 {
			t.Errorf("%d streams: the late test is in stream %d, want the first", n, seen["TestDockerKube"])
		}
		if seen["TestDockerA1"] != seen["TestDockerA2"] {
			t.Errorf("%d streams: a_test.go split between streams %d and %d", n, seen["TestDockerA1"], seen["TestDockerA2"])
		}
		// The first stream is harness's rest: whatever no pattern matches.
		if regexp.MustCompile(lines[0]).MatchString("TestDockerA1x") {
			t.Errorf("pattern %q is not anchored", lines[0])
		}
		if !strings.Contains(log.String(), "stream 1:") || !strings.Contains(log.String(), "after the other packages' 1m40s") {
			t.Errorf("the plan is not logged with its times:\n%s", log.String())
		}
	}
}

func TestTwoStreamsBalanceByMeasuredTime(t *testing.T) {
	measured, err := readTimes(strings.NewReader(timesFile))
	if err != nil {
		t.Fatal(err)
	}
	tests, err := readTests(strings.NewReader(testsIn))
	if err != nil {
		t.Fatal(err)
	}
	p := plan(tests, measured, 2, regexp.MustCompile("Kube"), []string{"models", "nemesis"}, 60)
	// Stream 1 starts with Kube's 200 s, stream 2 with 100 s of other
	// packages. Files longest first: a (400) to 2 (500), b (250) to 1
	// (450), c (120) to 1 (570), the unmeasured n (60) to 2 (560).
	if got, want := p[0].seconds, 570.0; got != want {
		t.Errorf("stream 1 expected %v s, want %v (%v)", got, want, p[0].tests)
	}
	if got, want := p[1].seconds, 560.0; got != want {
		t.Errorf("stream 2 expected %v s, want %v (%v)", got, want, p[1].tests)
	}
	if got := strings.Join(p[1].tests, ","); got != "TestDockerA1,TestDockerA2,TestDockerNew" {
		t.Errorf("stream 2 runs %s", got)
	}
	// A subtest's time is its parent's already: not counted twice.
	if measured.byTest["TestDockerA2"] != 100 || measured.byPackage["harness"] != 970.1 {
		t.Errorf("harness's top tests sum to %v, A2 %v", measured.byPackage["harness"], measured.byTest["TestDockerA2"])
	}
}

func TestBadInputIsRefusedByName(t *testing.T) {
	times := writeTimes(t)
	for _, c := range []struct {
		in   string
		o    options
		want string
	}{
		{testsIn, options{timesPath: times, streams: 1}, "at least 2"},
		{testsIn, options{streams: 2}, "no -times file"},
		{testsIn, options{timesPath: filepath.Join(t.TempDir(), "none.tsv"), streams: 2}, "no such file"},
		{"", options{timesPath: times, streams: 2}, "no tests on stdin"},
		{"TestDockerA1\n", options{timesPath: times, streams: 2}, "want FILE<TAB>TEST"},
		{testsIn, options{timesPath: times, streams: 2, late: "("}, "not a regular expression"},
	} {
		var out, log bytes.Buffer
		err := run(strings.NewReader(c.in), &out, &log, c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one saying %q", c.o, err, c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%+v: printed patterns on an error: %q", c.o, out.String())
		}
	}
}

func TestAStreamWithNoTestMatchesNone(t *testing.T) {
	if re := regexp.MustCompile(alternation(nil)); re.MatchString("TestDockerA1") {
		t.Errorf("the empty stream's pattern matches a test")
	}
}

// The repository's own times file is what CI plans with: it must parse,
// and hold harness's Docker tests.
func TestTheRepositorysTimesFileParses(t *testing.T) {
	f, err := os.Open("../times.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	measured, err := readTimes(f)
	if err != nil {
		t.Fatalf("scripts/times.tsv: %v", err)
	}
	n := 0
	for name := range measured.byTest {
		if strings.HasPrefix(name, "TestDocker") {
			n++
		}
	}
	if n < 20 {
		t.Errorf("scripts/times.tsv has %d of harness's Docker tests: it is not a whole run's times", n)
	}
}
