package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A stream as go test -json writes it: one package that passes with a
// slow test, a skip and a subtest, one whose test fails, one that does not
// build.
const stream = `{"Action":"start","Package":"m/a"}
{"Action":"run","Package":"m/a","Test":"TestSlow"}
{"Action":"output","Package":"m/a","Test":"TestSlow","Output":"=== RUN   TestSlow\n"}
{"Action":"output","Package":"m/a","Test":"TestSlow","Output":"    a_test.go:9: chatter that a passing test keeps to itself\n"}
{"Action":"run","Package":"m/a","Test":"TestSlow/sub"}
{"Action":"pass","Package":"m/a","Test":"TestSlow/sub","Elapsed":40}
{"Action":"pass","Package":"m/a","Test":"TestSlow","Elapsed":42.5}
{"Action":"run","Package":"m/a","Test":"TestSkipped"}
{"Action":"output","Package":"m/a","Test":"TestSkipped","Output":"=== RUN   TestSkipped\n"}
{"Action":"output","Package":"m/a","Test":"TestSkipped","Output":"    a_test.go:20: python3 is unavailable\n"}
{"Action":"output","Package":"m/a","Test":"TestSkipped","Output":"--- SKIP: TestSkipped (0.00s)\n"}
{"Action":"skip","Package":"m/a","Test":"TestSkipped","Elapsed":0}
{"Action":"output","Package":"m/a","Output":"PASS\n"}
{"Action":"output","Package":"m/a","Output":"ok  \tm/a\t43.1s\n"}
{"Action":"pass","Package":"m/a","Elapsed":43.1}
{"Action":"start","Package":"m/b"}
{"Action":"run","Package":"m/b","Test":"TestBroken"}
{"Action":"output","Package":"m/b","Test":"TestBroken","Output":"    b_test.go:5: want 1, got 2\n"}
{"Action":"fail","Package":"m/b","Test":"TestBroken","Elapsed":1.5}
{"Action":"output","Package":"m/b","Output":"FAIL\tm/b\t1.6s\n"}
{"Action":"fail","Package":"m/b","Elapsed":1.6}
{"ImportPath":"m/c","Action":"build-output","Output":"c/c.go:3:1: syntax error\n"}
{"Action":"start","Package":"m/c"}
{"Action":"output","Package":"m/c","Output":"FAIL\tm/c [build failed]\n"}
{"Action":"fail","Package":"m/c","Elapsed":0}
`

// summaryOf is the summary of the stream in, outside CI.
func summaryOf(t *testing.T, in string) string {
	t.Helper()
	out, _ := summaryAndVerdict(t, in, false)
	return out
}

// summaryAndVerdict is the summary of the stream in, under CI=true if ci,
// and whether it found the run green.
func summaryAndVerdict(t *testing.T, in string, ci bool) (string, bool) {
	t.Helper()
	var out, errs strings.Builder
	green := summarize(strings.NewReader(in), &out, &errs, ci, "")
	if errs.Len() > 0 {
		t.Errorf("testsummary's errors: %s", errs.String())
	}
	return out.String(), green
}

func TestSummaryKeepsWhatGoTestWouldPrint(t *testing.T) {
	got := summaryOf(t, stream)
	for _, want := range []string{
		"ok  \tm/a\t43.1s\n",
		"b_test.go:5: want 1, got 2\n", // a failed test's output
		"FAIL\tm/b\t1.6s\n",
		"c/c.go:3:1: syntax error\n", // a build error
		"FAIL\tm/c [build failed]\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "chatter that a passing test keeps") {
		t.Errorf("a passing test's output was printed:\n%s", got)
	}
}

func TestSummaryTellsWhereTheTimeWent(t *testing.T) {
	got := summaryOf(t, stream)
	times := got[strings.Index(got, "== time per package"):]
	if a, b := strings.Index(times, "m/a"), strings.Index(times, "m/b"); a < 0 || b < 0 || a > b {
		t.Errorf("packages not slowest first:\n%s", times)
	}
	if !strings.Contains(got, "42.5s  m/a TestSlow\n") {
		t.Errorf("slowest tests lack TestSlow at 42.5s:\n%s", got)
	}
	if strings.Contains(got, "TestSlow/sub\n") {
		t.Errorf("a subtest is listed among the slowest tests:\n%s", got)
	}
	if !strings.Contains(got, "m/a TestSkipped: a_test.go:20: python3 is unavailable") {
		t.Errorf("the skip and its reason are not listed:\n%s", got)
	}
}

func TestSummaryClosingLineCountsAPackageThatDidNotBuild(t *testing.T) {
	got := summaryOf(t, stream)
	if !strings.HasSuffix(got, "\ntests: 2 passed, 2 failed, 1 skipped\n") {
		t.Errorf("closing line wrong (TestSlow and its subtest passed; TestBroken and package m/c failed; 1 skipped):\n%s", got)
	}
	if !strings.Contains(got, "m/c (the package itself") {
		t.Errorf("package m/c not named as failed:\n%s", got)
	}
}

// A package whose tests are split over two processes is one package in the
// summary: its times added up, and failed if either half failed.
func TestSummaryJoinsAPackageSplitOverTwoProcesses(t *testing.T) {
	got := summaryOf(t, `{"Action":"start","Package":"m/h"}
{"Action":"pass","Package":"m/h","Test":"TestOne","Elapsed":60}
{"Action":"output","Package":"m/h","Output":"ok  \tm/h\t61s\n"}
{"Action":"pass","Package":"m/h","Elapsed":61}
{"Action":"start","Package":"m/h"}
{"Action":"fail","Package":"m/h","Test":"TestTwo","Elapsed":30}
{"Action":"output","Package":"m/h","Output":"FAIL\tm/h\t31s\n"}
{"Action":"fail","Package":"m/h","Elapsed":31}
`)
	if !strings.Contains(got, "1m32s  m/h  FAIL\n") {
		t.Errorf("the two halves are not one failed package of 1m32s:\n%s", got)
	}
	if n := strings.Count(got[strings.Index(got, "== time per package"):], "m/h  FAIL"); n != 1 {
		t.Errorf("the package is listed %d times, want once:\n%s", n, got)
	}
	if !strings.Contains(got, "tests: 1 passed, 1 failed, 0 skipped") {
		t.Errorf("closing count wrong:\n%s", got)
	}
}

// A panic outside any test (in TestMain) is the package's failure, with
// its cause.
func TestSummaryNamesTheCauseOfAPackageThatDiedOutsideItsTests(t *testing.T) {
	out, green := summaryAndVerdict(t, `{"Action":"start","Package":"m/d"}
{"Action":"output","Package":"m/d","Output":"panic: TestMain could not reach the engine\n"}
{"Action":"output","Package":"m/d","Output":"FAIL\tm/d\t0.1s\n"}
{"Action":"fail","Package":"m/d","Elapsed":0.1}
`, false)
	if green || !strings.Contains(out, "  m/d (the package itself: its build or its TestMain): panic: TestMain could not reach the engine\n") {
		t.Errorf("green=%v; the package's failure or its cause is missing:\n%s", green, out)
	}
}

// Docker tests near their budget (internal/dockertest's Budgets) are
// listed, and the times file carries each top test's budget.
func TestSummaryListsTestsNearTheirBudget(t *testing.T) {
	stream := `{"Action":"start","Package":"m/n"}
{"Action":"pass","Package":"m/n","Test":"TestDockerNatsKnownAnswers","Elapsed":400}
{"Action":"pass","Package":"m/n","Test":"TestDockerNatsKnownAnswers/sub","Elapsed":390}
{"Action":"pass","Package":"m/n","Test":"TestDockerPause","Elapsed":60}
{"Action":"pass","Package":"m/n","Elapsed":461}
`
	path := filepath.Join(t.TempDir(), "times.tsv")
	var out, errs strings.Builder
	if !summarize(strings.NewReader(stream), &out, &errs, true, path) {
		t.Errorf("a green run was found red:\n%s%s", out.String(), errs.String())
	}
	got := out.String()
	near := got[strings.Index(got, "== 1 tests over 80 % of their budget"):]
	if !strings.Contains(near, "6m40s  m/n TestDockerNatsKnownAnswers: 83 % of its 8m0s\n") || strings.Contains(near, "TestDockerPause") || strings.Contains(near, "/sub") {
		t.Errorf("tests near their budget wrong:\n%s", got)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"m/n\tTestDockerNatsKnownAnswers\t400.00\tpass\t480\n", "m/n\tTestDockerNatsKnownAnswers/sub\t390.00\tpass\t-\n", "m/n\tTestDockerPause\t60.00\tpass\t240\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("times file lacks %q:\n%s", want, b)
		}
	}
}
