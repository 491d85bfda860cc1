package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/reports"
)

func newReportCmd() *cobra.Command {
	var timeout time.Duration
	var memory int64
	var junit string
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate report.html, results.json and linearizability.html of a stored run",
		Long: `report reads a run directory's history.jsonl, checks it again and rewrites
report.html, results.json and linearizability.html (and linearizability/ when
the run has several keys). The run's name, parameters and rerun command are
kept from the old results.json when there is one. It exits like the run did:
0 valid, 1 invalid, 2 unknown; 254 when the history is malformed.`,
		Example: `  check report store/latest
  check report --junit junit.xml store/memory-lease-none-pause/20260102T030405.000Z`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("report takes one run directory (e.g. store/latest), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if st, err := os.Stat(dir); err == nil && !st.IsDir() {
				dir = filepath.Dir(dir)
			}
			run, err := reports.LoadRun(dir)
			if err != nil {
				var pe *history.ParseError
				switch {
				case errors.As(err, &pe):
					return usageErr("%s: %v", filepath.Join(dir, "history.jsonl"), err)
				case errors.Is(err, fs.ErrNotExist):
					return usageErr("%s is not a run directory: %v", dir, err)
				}
				return usageErr("%v", err)
			}
			sig, stop := signals()
			defer stop()
			start := time.Now()
			run.Result = models.Check(sig.Stop, run.Ops, models.Options{Timeout: timeout, MemoryLimit: memory})
			run.CheckTime = time.Since(start)
			if run.Error != "" && run.Result.Verdict == models.Valid {
				// As the harness does: a run that did not complete is not valid.
				run.Result.Verdict = models.Unknown
				run.Result.Explanation = "the run did not complete: " + run.Error
			}
			if err := reports.WriteAll(run); err != nil {
				return &exitError{harness.ExitFailed, err}
			}
			if junit != "" {
				if err := reports.WriteJUnitFile(junit, run); err != nil {
					return &exitError{harness.ExitFailed, err}
				}
			}
			reports.Summary(cmd.OutOrStdout(), run)
			return &exitError{harness.ExitCode(run.Result.Verdict), fmt.Errorf("")}
		},
	}
	cmd.Flags().DurationVar(&timeout, "check-timeout", 5*time.Minute, "bound on the search; past it the verdict is unknown")
	addCheckMemoryFlag(cmd.Flags(), &memory)
	cmd.Flags().StringVar(&junit, "junit", "", "also write JUnit XML (one test case per key) to this file")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })
	return cmd
}
