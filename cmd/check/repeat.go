package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/fencecheck/fencecheck/compare/result"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/lines"
	"github.com/fencecheck/fencecheck/internal/slots"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/runstore"
)

// maxTestCount bounds --test-count.
const maxTestCount = 10000

// parseConcurrency reads Jepsen's --concurrency: a number of clients, or
// "<k>n" for k clients per server the backend runs (3n with 5 nodes is 15
// clients; servers is Config.Servers).
func parseConcurrency(s string, servers int) (int, error) {
	t := strings.TrimSpace(s)
	perNode := strings.HasSuffix(t, "n")
	n, err := strconv.Atoi(strings.TrimSuffix(t, "n"))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("--concurrency: %q is not a number of clients (e.g. 5) or of clients per node (e.g. 2n)", s)
	}
	if perNode {
		n *= servers
	}
	return n, nil
}

// severity orders outcomes for --test-count's exit code: a violation
// found is the worst news, then a run that could not be carried out, then
// an unknown verdict, then valid.
func severity(code int) int {
	switch code {
	case harness.ExitInvalid:
		return 3
	case harness.ExitFailed:
		return 2
	case harness.ExitUnknown:
		return 1
	}
	return 0
}

// junitFor is where run i (from 1) of count writes its JUnit XML: the
// file given, or with several runs junit-run2.xml beside junit.xml, so no
// run overwrites another's.
func junitFor(path string, i, count int) string {
	if path == "" || count == 1 {
		return path
	}
	ext := filepath.Ext(path)
	return fmt.Sprintf("%s-run%d%s", strings.TrimSuffix(path, ext), i, ext)
}

// repeat carries out the test count times, test i with seed base+i-1,
// each in its own store directory, width tests at once (--parallel; one
// slot hands them out strictly in order), and hands out no new test after
// the first that is not valid unless keepGoing. An interrupt ends the
// tests going on (each is healed, checked and reported as usual) and
// starts no other. The exit code is the worst outcome (see severity); a
// bad argument stops at once. one carries out test i with the seed given
// and returns its exit code, its store directory and, when it could not
// be carried out, why; with width > 1 it is called from several
// goroutines at once.
func repeat(w io.Writer, count, width int, keepGoing bool, base int64, stopped func() bool,
	one func(i int, seed int64) testResult) error {
	var mu sync.Mutex
	worst, worstErr := harness.ExitValid, error(nil)
	var usage error
	tally := map[string]int{}
	done := 0
	var pooled models.ExposureCounts
	counted := 0
	halt := false // a test was not valid (and !keepGoing), or an argument was bad
	ran := slots.Run(count, width, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return halt || stopped()
	}, func(_, n int) {
		i := n + 1
		seed := base + int64(n)
		tr := one(i, seed)
		code, dir, err := tr.code, tr.dir, tr.err
		mu.Lock()
		defer mu.Unlock()
		if code == harness.ExitUsage {
			usage, halt = err, true
			return
		}
		done++
		if tr.exposures != nil {
			pooled.Add(*tr.exposures)
			counted++
		}
		word := outcomeWord(code)
		tally[word]++
		if severity(code) > severity(worst) {
			worst, worstErr = code, err
		}
		if code != harness.ExitValid && !keepGoing {
			halt = true
		}
		if count > 1 {
			line := fmt.Sprintf("test %d/%d: %s, seed %d", i, count, word, seed)
			if tr.exposures != nil {
				line += ", " + tr.exposures.Short()
			}
			if dir != "" {
				line += ", " + runstore.Run(dir).Report()
			}
			if err != nil && code == harness.ExitFailed {
				line += ": " + strings.Join(strings.Fields(err.Error()), " ")
			}
			fmt.Fprintln(w, line)
		}
	})
	if usage != nil {
		return usage
	}
	if stopped() && count > 1 {
		fmt.Fprintf(w, "interrupted after test %d of %d\n", ran, count)
	}
	if count > 1 {
		var parts []string
		for _, word := range []string{"valid", "invalid", "unknown", result.Error} {
			if n := tally[word]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, word))
			}
		}
		how := ""
		if done < count && !stopped() && !keepGoing {
			how = "; stopped at the first test that was not valid (--keep-going runs them all)"
		}
		fmt.Fprintf(w, "%d of %d tests run: %s%s\n", done, count, strings.Join(parts, ", "), how)
		if counted > 0 {
			fmt.Fprintf(w, "exposures pooled over %s: %s\n", words.Plural(counted, "test"), pooledText(pooled))
		}
	}
	if worst == harness.ExitValid {
		return nil
	}
	if worstErr == nil || worst != harness.ExitFailed {
		worstErr = fmt.Errorf("")
	}
	return &exitError{worst, worstErr}
}

// testResult is what one test of --test-count gives the loop: its exit
// code, its store directory, why it could not be carried out (if it
// could not), and its exposures (nil when it never got to count them).
type testResult struct {
	code      int
	dir       string
	err       error
	exposures *models.ExposureCounts
}

// pooledText is the exposures of several tests, pooled: the counts and
// the exact bound on the chance that an exposure is admitted, or that no
// test put safety at stake.
func pooledText(c models.ExposureCounts) string {
	if !c.Exercised() {
		return "0 exposures: " + models.NotExercised
	}
	s := c.Short()
	if b := c.BoundText(); b != "" {
		s += "; " + b
	}
	return s
}

func outcomeWord(code int) string {
	switch code {
	case harness.ExitValid:
		return string(models.Valid)
	case harness.ExitInvalid:
		return string(models.Invalid)
	case harness.ExitUnknown:
		return string(models.Unknown)
	}
	return result.Error
}

// prefixWriter writes whole lines to w, each with prefix, under mu: the
// progress of tests side by side (--parallel), told apart by their
// number, never mixed mid-line.
type prefixWriter struct {
	mu     *sync.Mutex
	w      io.Writer
	prefix string
	lines  lines.Splitter
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	return len(b), p.lines.Write(b, p.line)
}

func (p *prefixWriter) line(l string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, l)
	return err
}

// Flush writes what is left of a line that never ended.
func (p *prefixWriter) Flush() {
	if l, ok := p.lines.Rest(); ok {
		p.line(l)
	}
}
