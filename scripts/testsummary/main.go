// Command testsummary reads `go test -json` on stdin and writes what a
// plain `go test` would (each package's ok/FAIL line, and the output of the
// tests that failed), then, at the end, where CI's time went: each
// package's time, the ten slowest tests, every skipped test with its
// reason, and a closing "tests: N passed, N failed, N skipped" line.
//
// scripts/test pipes the whole suite through it, so a CI log answers "what
// took the time" without a second run. It only reads events: it never
// decides a test's outcome (go test's exit status stays the script's), and
// it must never drop a failing test's output.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output and build-fail events
}

type testKey struct{ pkg, test string }

type summary struct {
	out        io.Writer
	pending    map[testKey][]string // a running test's output, printed if it fails
	pkgTime    map[string]float64
	pkgFailed  map[string]bool
	pkgOrder   []string
	tests      map[testKey]float64 // top-level tests' elapsed seconds
	skips      map[testKey]string  // skipped tests and their reason
	passed     int
	failed     int
	skipped    int
	failedName []string
}

func newSummary(out io.Writer) *summary {
	return &summary{out: out, pending: map[testKey][]string{}, pkgTime: map[string]float64{},
		pkgFailed: map[string]bool{}, tests: map[testKey]float64{}, skips: map[testKey]string{}}
}

// add takes one line of input. A line that is not a test event (go test's
// own messages before JSON starts, a build error) is written as it is.
func (s *summary) add(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
		fmt.Fprintln(s.out, line)
		return
	}
	switch {
	case e.Action == "build-output":
		fmt.Fprint(s.out, e.Output)
	case e.Test == "":
		s.packageEvent(e)
	default:
		s.testEvent(e)
	}
}

func (s *summary) packageEvent(e event) {
	switch e.Action {
	case "start":
		// A package split over two test processes (scripts/test runs
		// harness's Docker tests in both streams) starts twice: one entry,
		// its times added up, failed if either part failed.
		if _, seen := s.pkgTime[e.Package]; !seen {
			s.pkgOrder = append(s.pkgOrder, e.Package)
			s.pkgTime[e.Package] = 0
		}
	case "output":
		// ok/FAIL/PASS lines and whatever a package prints outside its
		// tests (a panic in TestMain, a timeout's goroutine dump).
		if strings.TrimSpace(e.Output) != "PASS" {
			fmt.Fprint(s.out, e.Output)
		}
	case "pass", "fail", "skip":
		s.pkgTime[e.Package] += e.Elapsed
		s.pkgFailed[e.Package] = s.pkgFailed[e.Package] || e.Action == "fail"
	}
}

func (s *summary) testEvent(e event) {
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "output":
		s.pending[k] = append(s.pending[k], e.Output)
	case "pass", "fail", "skip":
		top := !strings.Contains(e.Test, "/")
		if top {
			s.tests[k] = e.Elapsed
		}
		switch e.Action {
		case "pass":
			if top {
				s.passed++
			}
		case "fail":
			if top {
				s.failed++
				s.failedName = append(s.failedName, e.Package+" "+e.Test)
			}
			for _, l := range s.pending[k] {
				fmt.Fprint(s.out, l)
			}
		case "skip":
			if top {
				s.skipped++
				s.skips[k] = skipReason(s.pending[k])
			}
		}
		delete(s.pending, k)
	}
}

// skipReason is the message a skipped test logged, without go test's
// framing lines.
func skipReason(lines []string) string {
	var reason []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		reason = append(reason, t)
	}
	return strings.Join(reason, " ")
}

func (s *summary) anyFailedIn(pkg string) bool {
	for _, n := range s.failedName {
		if strings.HasPrefix(n, pkg+" ") {
			return true
		}
	}
	return false
}

func seconds(f float64) string {
	return time.Duration(f * float64(time.Second)).Round(100 * time.Millisecond).String()
}

func short(pkg string) string {
	return strings.TrimPrefix(pkg, "github.com/fencecheck/fencecheck/")
}

// finish writes the times, the skips and the closing count. A package
// that failed with no failed test (its build, its TestMain, a timeout)
// counts as one failure, so the closing line never says 0 failed about a
// red run.
func (s *summary) finish() {
	for _, p := range s.pkgOrder {
		if s.pkgFailed[p] && !s.anyFailedIn(p) {
			s.failed++
			s.failedName = append(s.failedName, p+" (the package itself: build, TestMain or timeout)")
		}
	}
	fmt.Fprintln(s.out, "\n== time per package (slowest first)")
	pkgs := append([]string(nil), s.pkgOrder...)
	sort.SliceStable(pkgs, func(i, j int) bool { return s.pkgTime[pkgs[i]] > s.pkgTime[pkgs[j]] })
	total := 0.0
	for _, p := range pkgs {
		total += s.pkgTime[p]
		if s.pkgTime[p] < 1 && !s.pkgFailed[p] {
			continue // the many packages that take no time say nothing
		}
		mark := ""
		if s.pkgFailed[p] {
			mark = "  FAIL"
		}
		fmt.Fprintf(s.out, "%10s  %s%s\n", seconds(s.pkgTime[p]), short(p), mark)
	}
	fmt.Fprintf(s.out, "%10s  all %d packages\n", seconds(total), len(pkgs))

	fmt.Fprintln(s.out, "\n== the ten slowest tests")
	keys := make([]testKey, 0, len(s.tests))
	for k := range s.tests {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return s.tests[keys[i]] > s.tests[keys[j]] })
	for i, k := range keys {
		if i == 10 {
			break
		}
		fmt.Fprintf(s.out, "%10s  %s %s\n", seconds(s.tests[k]), short(k.pkg), k.test)
	}

	if len(s.skips) > 0 {
		fmt.Fprintln(s.out, "\n== skipped tests and why")
		skipped := make([]testKey, 0, len(s.skips))
		for k := range s.skips {
			skipped = append(skipped, k)
		}
		sort.Slice(skipped, func(i, j int) bool {
			return skipped[i].pkg+skipped[i].test < skipped[j].pkg+skipped[j].test
		})
		for _, k := range skipped {
			fmt.Fprintf(s.out, "  %s %s: %s\n", short(k.pkg), k.test, s.skips[k])
		}
	}
	if len(s.failedName) > 0 {
		fmt.Fprintln(s.out, "\n== failed tests")
		for _, n := range s.failedName {
			fmt.Fprintf(s.out, "  %s\n", short(n))
		}
	}
	fmt.Fprintf(s.out, "\ntests: %d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
}

func main() {
	s := newSummary(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		s.add(in.Text())
	}
	s.finish()
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: reading go test's output: %v\n", err)
		os.Exit(1)
	}
}
