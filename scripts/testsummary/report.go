package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/internal/dockertest"
)

func seconds(f float64) string {
	return time.Duration(f * float64(time.Second)).Round(100 * time.Millisecond).String()
}

func short(pkg string) string {
	return strings.TrimPrefix(pkg, "github.com/fencecheck/fencecheck/")
}

// report writes where the time went, the skips, what made the run red and
// the closing count, last. A package that failed with no failed test (its
// build, its TestMain) counts as one failure, so the closing line never
// says 0 failed about a red run.
func (s *summary) report() {
	failedIn := map[string]bool{}
	for _, r := range s.results {
		if r.outcome == "fail" || r.outcome == "unfinished" {
			failedIn[r.pkg] = true
		}
	}
	for _, p := range s.pkgOrder {
		if pkg := s.pkgs[p]; pkg.failed && !failedIn[p] {
			why := ""
			if pkg.died != "" {
				why = ": " + pkg.died
			}
			s.failed++
			s.failures = append(s.failures, short(p)+" (the package itself: its build or its TestMain)"+why)
		}
	}
	s.packageTimes()
	s.slowest()
	s.nearBudget()
	if len(s.skips) > 0 {
		fmt.Fprintf(s.out, "\n== %d skipped tests and why\n", len(s.skips))
		for _, k := range s.skips {
			mark := ""
			if !k.allowed {
				mark = " [not allowed under CI=true]"
			}
			fmt.Fprintf(s.out, "  %s %s: %s%s\n", short(k.pkg), k.test, k.reason, mark)
		}
	}
	if s.timesFile != "" {
		fmt.Fprintf(s.out, "\nevery test's time: %s\n", s.timesFile)
	}
	if len(s.failures) > 0 {
		fmt.Fprintf(s.out, "\n== %d failed tests\n", len(s.failures))
		for _, f := range s.failures {
			fmt.Fprintf(s.out, "  %s\n", f)
		}
	}
	fmt.Fprintf(s.out, "\ntests: %d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
}

func (s *summary) packageTimes() {
	fmt.Fprintln(s.out, "\n== time per package (slowest first)")
	pkgs := append([]string(nil), s.pkgOrder...)
	sort.SliceStable(pkgs, func(i, j int) bool { return s.pkgs[pkgs[i]].seconds > s.pkgs[pkgs[j]].seconds })
	total := 0.0
	for _, name := range pkgs {
		p := s.pkgs[name]
		total += p.seconds
		if p.seconds < 1 && !p.failed {
			continue // the many packages that take no time say nothing
		}
		mark := ""
		if p.failed {
			mark = "  FAIL"
		}
		fmt.Fprintf(s.out, "%10s  %s%s\n", seconds(p.seconds), short(name), mark)
	}
	fmt.Fprintf(s.out, "%10s  all %d packages\n", seconds(total), len(pkgs))
}

// tops are the results of top tests (a subtest's time is within its
// parent's), slowest first.
func (s *summary) tops() []result {
	var tops []result
	for _, r := range s.results {
		if !strings.Contains(r.test, "/") {
			tops = append(tops, r)
		}
	}
	sort.SliceStable(tops, func(i, j int) bool { return tops[i].seconds > tops[j].seconds })
	return tops
}

func (s *summary) slowest() {
	fmt.Fprintln(s.out, "\n== the ten slowest tests")
	for i, r := range s.tops() {
		if i == 10 {
			break
		}
		fmt.Fprintf(s.out, "%10s  %s %s\n", seconds(r.seconds), short(r.pkg), r.test)
	}
}

// nearBudget lists every test over 80 % of its budget: the next to fail
// on a slow day. A test's time here includes what its budget leaves out
// (the node image built by a process's first test).
func (s *summary) nearBudget() {
	var near []string
	for _, r := range s.tops() {
		budget, ok := dockertest.BudgetOf(r.test)
		if !ok || r.seconds < 0.8*budget.Seconds() {
			continue
		}
		near = append(near, fmt.Sprintf("%10s  %s %s: %.0f %% of its %s", seconds(r.seconds), short(r.pkg), r.test, 100*r.seconds/budget.Seconds(), budget))
	}
	if len(near) == 0 {
		return
	}
	fmt.Fprintf(s.out, "\n== %d tests over 80 %% of their budget (internal/dockertest/budgets.go)\n", len(near))
	for _, l := range near {
		fmt.Fprintln(s.out, l)
	}
}
