package main

import (
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

func summarize(t *testing.T, in string) string {
	t.Helper()
	var out strings.Builder
	s := newSummary(&out)
	for _, l := range strings.Split(strings.TrimSuffix(in, "\n"), "\n") {
		s.add(l)
	}
	s.finish()
	return out.String()
}

func TestSummaryKeepsWhatGoTestWouldPrint(t *testing.T) {
	got := summarize(t, stream)
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
	got := summarize(t, stream)
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
	got := summarize(t, stream)
	if !strings.HasSuffix(got, "\ntests: 1 passed, 2 failed, 1 skipped\n") {
		t.Errorf("closing line wrong (1 passed; TestBroken and package m/c failed; 1 skipped):\n%s", got)
	}
	if !strings.Contains(got, "m/c (the package itself") {
		t.Errorf("package m/c not named as failed:\n%s", got)
	}
}

// A package whose tests are split over two processes is one package in the
// summary: its times added up, and failed if either half failed.
func TestSummaryJoinsAPackageSplitOverTwoProcesses(t *testing.T) {
	got := summarize(t, `{"Action":"start","Package":"m/h"}
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
