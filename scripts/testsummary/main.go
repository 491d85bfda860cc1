// Command testsummary reads `go test -json` on stdin and writes what a
// plain `go test` would (each package's ok/FAIL line, and the output of the
// tests that failed), then, at the end, where CI's time went and what made
// the run red: each package's time, the ten slowest tests, every test over
// 80 % of its budget, every skipped test with its reason, the failed
// tests by name with their cause, and a closing
// "tests: N passed, N failed, N skipped" line, always the last.
//
// A test that never ended (it hung into go test's -timeout, a goroutine
// panicked, the process was killed, or the input stopped mid-test) gets
// no fail event from go test; testsummary names it all the same, with
// how long it ran, the last lines of its output and how its test process
// ended, and counts it failed. Under CI=true a skip fails the run too,
// unless its reason is in internal/dockertest's AllowedSkips. Tests and
// subtests count alike.
//
// With -times FILE it also writes every test's and subtest's package,
// time, outcome and budget (internal/dockertest's Budgets) to FILE.
//
// It exits 1 when any test failed, any package failed, or a skip was not
// allowed; 254 on a bad flag. scripts/test pipes the whole suite through
// it. It must never drop a failing test's output.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/fencecheck/fencecheck/internal/dockertest"
)

func main() {
	flags := flag.NewFlagSet("testsummary", flag.ContinueOnError)
	times := flags.String("times", "", "write every test's and subtest's package, time, outcome and budget to this file, tab-separated")
	flags.SetOutput(os.Stderr)
	if err := flags.Parse(os.Args[1:]); err != nil {
		os.Exit(254)
	}
	if flags.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "testsummary: unexpected argument %q: it reads `go test -json` on its standard input (testsummary [-times FILE] < events)\n", flags.Arg(0))
		os.Exit(254)
	}
	if !summarize(os.Stdin, os.Stdout, os.Stderr, dockertest.CI(), *times) {
		os.Exit(1)
	}
}

// summarize reads go test's events from in and writes the summary to out,
// and every test's time to the file timesPath if it is not empty; under
// ci, a skip not allowed fails. It reports whether the run was green.
func summarize(in io.Reader, out, errs io.Writer, ci bool, timesPath string) bool {
	s := newSummary(out, ci)
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 1<<20), 64<<20)
	for lines.Scan() {
		s.add(lines.Text())
	}
	green := true
	if err := lines.Err(); err != nil {
		fmt.Fprintf(errs, "testsummary: reading go test's output: %v\n", err)
		green = false
	}
	s.endOfInput()
	if timesPath != "" {
		if err := writeTimes(timesPath, s.results); err != nil {
			fmt.Fprintf(errs, "testsummary: writing every test's time: %v\n", err)
			green = false
		} else {
			s.timesFile = timesPath
		}
	}
	s.report()
	return green && s.failed == 0
}
