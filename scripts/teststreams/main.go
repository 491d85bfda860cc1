// Command teststreams splits harness's Docker tests between CI's test
// streams by their measured times, so that the streams end together
// instead of one waiting half an hour on the other.
//
// It reads, on stdin, one line per harness Docker test, "FILE<TAB>TEST"
// (the test's source file and name), and the times of an earlier run (the
// -times file: testsummary's times.tsv, kept in the repository as
// scripts/times.tsv). A file's tests stay together in one stream: they are
// one backend's known answers, which hand their clusters on warm
// (harness's sharedClusters). The tests matching -late run last in the
// first stream (they need the slowest compiles); the packages named by
// -other run first in the second stream. Every other file goes, longest
// first, to the stream with the least time so far (longest processing
// time first: within 4/3 of the best split).
//
// It prints, for streams 2..N, one line each: the anchored alternation of
// the tests that stream runs (`^(TestA|TestB)$`), for `go test -run`. The
// first stream runs the rest of harness (`-skip` of the others), so a test
// added after the times were measured lands there. On stderr it says what
// each stream is expected to take, so CI's log shows the plan beside the
// outcome.
//
// What it must never do: drop a test (every test on stdin is in exactly
// one stream), split a file, or need Docker; a test with no measured
// time is given -default seconds, not left out.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	flags := flag.NewFlagSet("teststreams", flag.ContinueOnError)
	timesPath := flags.String("times", "", "an earlier run's times.tsv (package, test, seconds, ...)")
	streams := flags.Int("streams", 2, "how many streams run tests at once")
	late := flags.String("late", "", "a regular expression of the tests that run last in the first stream")
	other := flags.String("other", "", "space-separated packages (as times.tsv names them) that run first in the second stream")
	def := flags.Duration("default", time.Minute, "the time assumed for a test the times file does not have")
	flags.SetOutput(os.Stderr)
	if err := flags.Parse(os.Args[1:]); err != nil {
		os.Exit(254)
	}
	if err := run(os.Stdin, os.Stdout, os.Stderr, options{
		timesPath: *timesPath, streams: *streams, late: *late, other: strings.Fields(*other), def: *def,
	}); err != nil {
		fmt.Fprintf(os.Stderr, "teststreams: %v\n", err)
		os.Exit(254)
	}
}

type options struct {
	timesPath string
	streams   int
	late      string
	other     []string
	def       time.Duration
}

func run(in io.Reader, out, log io.Writer, o options) error {
	if o.streams < 2 {
		return fmt.Errorf("-streams %d: there must be at least 2 (the first runs harness's rest, the second the other packages)", o.streams)
	}
	if o.timesPath == "" {
		return fmt.Errorf("no -times file: give an earlier run's times.tsv (scripts/times.tsv)")
	}
	var lateRE *regexp.Regexp
	if o.late != "" {
		var err error
		if lateRE, err = regexp.Compile(o.late); err != nil {
			return fmt.Errorf("-late %q is not a regular expression: %v", o.late, err)
		}
	}
	f, err := os.Open(o.timesPath)
	if err != nil {
		return err
	}
	defer f.Close()
	measured, err := readTimes(f)
	if err != nil {
		return fmt.Errorf("%s: %v", o.timesPath, err)
	}
	tests, err := readTests(in)
	if err != nil {
		return err
	}
	p := plan(tests, measured, o.streams, lateRE, o.other, o.def.Seconds())
	for i, s := range p {
		fmt.Fprintf(log, "stream %d: %d of harness's Docker tests, about %s by the last measured times%s\n",
			i+1, len(s.tests), (time.Duration(s.seconds) * time.Second).String(), s.note)
	}
	for _, s := range p[1:] {
		fmt.Fprintln(out, alternation(s.tests))
	}
	return nil
}

// test is one harness Docker test and its source file.
type test struct{ file, name string }

// times are the measured seconds of top-level tests by package and name.
type times struct {
	byTest    map[string]float64 // harness's tests
	byPackage map[string]float64 // every package's tests, summed
}

// readTimes reads testsummary's times.tsv: package, test, seconds, then
// columns it ignores. Subtests (a "/" in the name) are in their parent's
// time and are skipped.
func readTimes(r io.Reader) (times, error) {
	t := times{byTest: map[string]float64{}, byPackage: map[string]float64{}}
	lines := bufio.NewScanner(r)
	n := 0
	for lines.Scan() {
		n++
		fields := strings.Split(lines.Text(), "\t")
		if n == 1 && len(fields) > 0 && fields[0] == "package" {
			continue
		}
		if len(fields) < 3 {
			return t, fmt.Errorf("line %d has %d columns, want package, test and seconds", n, len(fields))
		}
		pkg, name := fields[0], fields[1]
		secs, err := strconv.ParseFloat(fields[2], 64)
		if err != nil {
			return t, fmt.Errorf("line %d: seconds %q: %v", n, fields[2], err)
		}
		if strings.Contains(name, "/") {
			continue
		}
		t.byPackage[pkg] += secs
		if pkg == "harness" {
			t.byTest[name] = secs
		}
	}
	return t, lines.Err()
}

// readTests reads "FILE<TAB>TEST" lines.
func readTests(r io.Reader) ([]test, error) {
	var out []test
	lines := bufio.NewScanner(r)
	n := 0
	for lines.Scan() {
		n++
		line := strings.TrimSpace(lines.Text())
		if line == "" {
			continue
		}
		file, name, ok := strings.Cut(line, "\t")
		if !ok || file == "" || name == "" {
			return nil, fmt.Errorf("stdin line %d %q: want FILE<TAB>TEST", n, line)
		}
		out = append(out, test{file: file, name: name})
	}
	if err := lines.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no tests on stdin: refusing to plan streams of nothing")
	}
	return out, nil
}

// stream is one stream's share.
type stream struct {
	tests   []string
	seconds float64
	note    string
}

// plan splits tests into n streams. The first holds the late tests; the
// second begins with the other packages' measured time; every file goes,
// longest first, to the stream with the least so far (ties to the lower
// stream, so the plan is the same on every run of the same inputs).
func plan(tests []test, measured times, n int, late *regexp.Regexp, other []string, def float64) []stream {
	p := make([]stream, n)
	timeOf := func(name string) float64 {
		if s, ok := measured.byTest[name]; ok {
			return s
		}
		return def
	}
	var otherSecs float64
	for _, pkg := range other {
		otherSecs += measured.byPackage[pkg]
	}
	p[1].seconds = otherSecs
	p[1].note = fmt.Sprintf(" after the other packages' %s", (time.Duration(otherSecs) * time.Second).String())

	type file struct {
		name    string
		tests   []string
		seconds float64
	}
	byName := map[string]*file{}
	var files []*file
	var lateTests []string
	var lateSecs float64
	for _, t := range tests {
		if late != nil && late.MatchString(t.name) {
			lateTests = append(lateTests, t.name)
			lateSecs += timeOf(t.name)
			continue
		}
		f := byName[t.file]
		if f == nil {
			f = &file{name: t.file}
			byName[t.file] = f
			files = append(files, f)
		}
		f.tests = append(f.tests, t.name)
		f.seconds += timeOf(t.name)
	}
	p[0].seconds = lateSecs
	sort.SliceStable(files, func(i, j int) bool { return files[i].seconds > files[j].seconds })
	for _, f := range files {
		least := 0
		for i := range p {
			if p[i].seconds < p[least].seconds {
				least = i
			}
		}
		p[least].tests = append(p[least].tests, f.tests...)
		p[least].seconds += f.seconds
	}
	p[0].tests = append(p[0].tests, lateTests...)
	if len(lateTests) > 0 {
		p[0].note = fmt.Sprintf(" (%d of them last)", len(lateTests))
	}
	for i := range p {
		sort.Strings(p[i].tests)
	}
	return p
}

// alternation is the anchored pattern matching exactly names; a stream
// given no test gets a pattern no test name can match.
func alternation(names []string) string {
	if len(names) == 0 {
		return "^$"
	}
	return "^(" + strings.Join(names, "|") + ")$"
}
