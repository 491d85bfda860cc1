package main

import (
	"bufio"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// writeTimes writes every test's and subtest's time to path, one a line,
// tab-separated under a header: package, test, seconds, outcome (pass,
// fail, skip, unfinished) and the budget in seconds (a top Docker test's,
// from internal/dockertest's Budgets; "-" for the rest). Sorted by
// package and test, so two runs' files compare with diff.
func writeTimes(path string, results []result) error {
	sorted := append([]result(nil), results...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].pkg != sorted[j].pkg {
			return sorted[i].pkg < sorted[j].pkg
		}
		return sorted[i].test < sorted[j].test
	})
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "package\ttest\tseconds\toutcome\tbudget_seconds")
	for _, r := range sorted {
		budget := "-"
		if b, ok := dockertest.BudgetOf(r.test); ok && !strings.Contains(r.test, "/") {
			budget = fmt.Sprintf("%.0f", b.Seconds())
		}
		fmt.Fprintf(w, "%s\t%s\t%.2f\t%s\t%s\n", short(r.pkg), r.test, r.seconds, r.outcome, budget)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
