package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output and build-fail events
}

type testKey struct{ pkg, test string }

// result is how one test or subtest ended: pass, fail, skip, or
// unfinished (it never ended: see unfinished).
type result struct {
	testKey
	seconds float64
	outcome string
}

// running is a test that started and has not ended.
type running struct {
	start  time.Time
	output []string // held, printed if it fails
	before int      // its output's length when the process's last words began, or -1
}

// pkgRun is one package's test processes (harness runs in two, one
// after the other: one entry, its times added up, failed if either
// failed).
type pkgRun struct {
	seconds float64
	failed  bool
	running map[string]*running
	last    time.Time // the latest event's time
	// lastWords is how the current test process ended, from the first
	// line of a panic, a fatal error or a signal on (its goroutines):
	// go test attributes it to whichever test ran last.
	lastWords []string
	// died is the first line of the last words of a test process that
	// failed, for a package that failed with no test running (TestMain).
	died string
}

// crashLines start what a test process says as it dies.
var crashLines = []string{"panic: ", "fatal error: ", "signal: ", "SIGQUIT: ", "SIGABRT: "}

// maxLastWords bounds the last words kept (a goroutine dump of a busy
// process); the cause is their first line.
const maxLastWords = 20000

// tailLines is how much of an unfinished test's output is printed.
const tailLines = 50

// skip is a skipped test and its reason.
type skip struct {
	testKey
	reason  string
	allowed bool // under CI=true: AllowedSkips has its reason
}

type summary struct {
	out      io.Writer
	ci       bool // under CI=true, a skip not allowed fails
	pkgs     map[string]*pkgRun
	pkgOrder []string
	results  []result
	skips    []skip
	failures []string // what made the run red, a line each
	passed   int
	failed   int
	skipped  int
	// timesFile is where every test's time went, if anywhere.
	timesFile string
}

func newSummary(out io.Writer, ci bool) *summary {
	return &summary{out: out, ci: ci, pkgs: map[string]*pkgRun{}}
}

// add takes one line of input. A line that is not a test event (go test's
// own messages before JSON starts, a build error) is written as it is.
func (s *summary) add(line string) {
	var e event
	if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
		fmt.Fprintln(s.out, line)
		return
	}
	if e.Action == "build-output" {
		fmt.Fprint(s.out, e.Output)
		return
	}
	if e.Package == "" {
		return
	}
	p := s.pkg(e.Package)
	if !e.Time.IsZero() {
		p.last = e.Time
	}
	if e.Test == "" {
		s.packageEvent(p, e)
	} else {
		s.testEvent(p, e)
	}
}

func (s *summary) pkg(name string) *pkgRun {
	p := s.pkgs[name]
	if p == nil {
		p = &pkgRun{running: map[string]*running{}}
		s.pkgs[name] = p
		s.pkgOrder = append(s.pkgOrder, name)
	}
	return p
}

func (s *summary) packageEvent(p *pkgRun, e event) {
	switch e.Action {
	case "start":
		p.lastWords = nil // a new test process
	case "output":
		// ok/FAIL/PASS lines and whatever a package prints outside its
		// tests (a panic in TestMain): printed as they come.
		p.note(e.Output, false)
		if strings.TrimSpace(e.Output) != "PASS" {
			fmt.Fprint(s.out, e.Output)
		}
	case "pass", "fail", "skip":
		p.seconds += e.Elapsed
		p.failed = p.failed || e.Action == "fail"
		if e.Action == "fail" && len(p.lastWords) > 0 {
			p.died = strings.TrimSpace(p.lastWords[0])
		}
		s.unfinished(e.Package, p, e.Time, "")
	}
}

// note watches the package's output for its process's last words, and
// keeps them from their first line on. A test's own output is kept whole
// all the same: a line that only looked like a crash is followed by more
// test events, and then forgotten (forget).
func (p *pkgRun) note(line string, ofATest bool) {
	if p.lastWords == nil {
		for _, c := range crashLines {
			if strings.HasPrefix(line, c) {
				p.lastWords = []string{line}
				for _, r := range p.running {
					r.before = len(r.output)
				}
				return
			}
		}
		return
	}
	if ofATest && len(p.lastWords) < maxLastWords {
		p.lastWords = append(p.lastWords, line)
	}
}

// forget drops last words a test's ending showed not to be any: the
// process goes on.
func (p *pkgRun) forget() {
	p.lastWords = nil
	for _, r := range p.running {
		r.before = -1
	}
}

func (s *summary) testEvent(p *pkgRun, e event) {
	k := testKey{e.Package, e.Test}
	r := p.running[e.Test]
	if r == nil {
		r = &running{start: e.Time, before: -1}
		p.running[e.Test] = r
	}
	switch e.Action {
	case "output":
		p.note(e.Output, true)
		r.output = append(r.output, e.Output)
	case "pass", "fail", "skip":
		delete(p.running, e.Test)
		p.forget()
		s.results = append(s.results, result{k, e.Elapsed, e.Action})
		switch e.Action {
		case "pass":
			s.passed++
		case "fail":
			s.failed++
			s.failures = append(s.failures, short(k.pkg)+" "+k.test)
			for _, l := range r.output {
				fmt.Fprint(s.out, l)
			}
		case "skip":
			sk := skip{k, skipReason(r.output), !s.ci || dockertest.SkipAllowed(skipReason(r.output))}
			s.skips = append(s.skips, sk)
			if sk.allowed {
				s.skipped++
			} else {
				s.failed++
				s.failures = append(s.failures, fmt.Sprintf("%s %s: skipped, and under CI=true no test may skip (internal/dockertest's AllowedSkips has not its reason): %s", short(k.pkg), k.test, sk.reason))
			}
		}
	}
}

// unfinished names every test of package pkg still running when its test
// process ended at end (or, with cause set, when the input ended): go
// test gives a test no fail event when it hung into -timeout, a goroutine
// panicked or the process was killed. Each is printed with how long it
// ran and the last lines of its output, then the process's last words
// once; each counts as failed.
func (s *summary) unfinished(pkg string, p *pkgRun, end time.Time, cause string) {
	if len(p.running) == 0 {
		return
	}
	if cause == "" {
		cause = "its test process ended without a word (os.Exit, or killed)"
		if len(p.lastWords) > 0 {
			cause = "its test process ended: " + strings.TrimSpace(p.lastWords[0])
		}
	}
	p.failed = true
	names := make([]string, 0, len(p.running))
	for name := range p.running {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := p.running[names[i]], p.running[names[j]]
		if !a.start.Equal(b.start) {
			return a.start.Before(b.start)
		}
		return names[i] < names[j]
	})
	for _, name := range names {
		r := p.running[name]
		ran, took := "for an unknown time", 0.0
		if !r.start.IsZero() && !end.IsZero() {
			took = end.Sub(r.start).Seconds()
			ran = "for " + seconds(took)
		}
		out := r.output
		if r.before >= 0 {
			out = out[:r.before] // the rest is the process's last words, printed below
		}
		if len(out) > tailLines {
			out = out[len(out)-tailLines:]
		}
		fmt.Fprintf(s.out, "=== %s %s did not finish: it ran %s, then %s. Its last %d lines:\n", short(pkg), name, ran, cause, len(out))
		for _, l := range out {
			fmt.Fprint(s.out, l)
		}
		s.results = append(s.results, result{testKey{pkg, name}, took, "unfinished"})
		s.failed++
		s.failures = append(s.failures, fmt.Sprintf("%s %s: did not finish (ran %s): %s", short(pkg), name, strings.TrimPrefix(ran, "for "), cause))
		delete(p.running, name)
	}
	if len(p.lastWords) > 0 {
		fmt.Fprintf(s.out, "=== how %s's test process ended:\n", short(pkg))
		for _, l := range p.lastWords {
			fmt.Fprint(s.out, l)
		}
		p.lastWords = nil
	}
}

// endOfInput names the tests still running when the input ended: go
// test was killed, or the stream was cut.
func (s *summary) endOfInput() {
	for _, name := range s.pkgOrder {
		p := s.pkgs[name]
		s.unfinished(name, p, p.last, "the input ended while it ran (go test killed, or its stream cut)")
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
