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
	"github.com/fencecheck/fencecheck/models/verdict"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/runstore"
)

func newReportCmd() *cobra.Command {
	var flags recheckFlags
	var junit string
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Regenerate report.html, results.json and linearizability.html of a stored run",
		Long: `report reads a run directory's history.jsonl, checks it again and rewrites
report.html, results.json and linearizability.html (and linearizability/ when
the run has several keys). The run's name, parameters and rerun command are
kept from the old results.json when there is one. A history that is not a
finished run's (no end event, a last line cut short, ops still open) is never
valid, whatever the old results.json said: a violation in it stands, anything
else is unknown. It exits 0 valid, 1 invalid, 2 unknown; 254 when the history
is malformed or a flag is out of range. A file that cannot be written is
reported beside the verdict, whose exit code stands.`,
		Example: `  check report store/latest
  check report --junit junit.xml store/memory-lease-fenced-none-pause/20260102T030405.000Z`,
		Args: oneArg("report", "one run directory (e.g. store/latest)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := flags.valid(); err != nil {
				return err
			}
			if err := harness.CheckJUnitPath(junit); err != nil {
				return err
			}
			dir, given := args[0], ""
			if st, err := os.Stat(dir); err == nil && !st.IsDir() {
				// A file of the run (its history.jsonl, say) stands for
				// its directory.
				dir, given = filepath.Dir(dir), fmt.Sprintf("%s is a file, and its directory ", dir)
			}
			run, err := reports.LoadRun(dir)
			if err != nil {
				var pe *history.ParseError
				switch {
				case errors.As(err, &pe):
					return historyErr(runstore.Run(dir).History(), err)
				case errors.Is(err, fs.ErrNotExist):
					return dataErr("%s%s is not a run directory (it has no history.jsonl; e.g. check report store/latest)", given, dir)
				}
				return dataErr("%v", err)
			}
			abort, stop := checkSignals()
			defer stop()
			start := time.Now()
			checked := models.Check(abort, run.Ops, models.Options{Timeout: flags.timeout, MemoryLimit: flags.memory})
			run.CheckTime = time.Since(start)
			min := harness.MinExposuresOf(run.Params)
			if cmd.Flags().Changed("min-exposures") {
				min = flags.minExposures
			}
			// As the harness does: a run that did not complete, or did not
			// finish its workload or its final reads, is not valid — and
			// neither is one whose history shows it did not finish,
			// whatever its results.json said.
			x := models.CountExposures(run.Events)
			run.Result = verdict.Settle(verdict.Run{
				Check: checked, Ops: run.Ops, Unfinished: run.NotFinished(), Failed: run.Error, Stopped: stopped(abort),
				Exposures: &x, Facts: harness.RunFactsOf(run.Params, run.Ops, run.Faults, run.End()), MinExposures: min, Drops: run.Drops,
				Agreement: run.Agreement.Recheck(run.Ops),
			})
			if len(run.Events) == 0 && run.HistoryNote == "" {
				run.Result.Explanation = runstore.Run(dir).History() + " is empty: no events were recorded"
				if run.Error != "" {
					run.Result.Explanation += "; the run did not complete: " + run.Error
				}
			}
			// The verdict is printed and returned whatever happens to the
			// files: a file that cannot be written is said beside it.
			reports.SummaryBeside(cmd.OutOrStdout(), run, reports.WriteOutputs(run, junit, ""))
			return &exitError{harness.ExitCode(run.Result.Verdict), fmt.Errorf("")}
		},
	}
	cmd.Flags().StringVar(&junit, "junit", "", "also write JUnit XML (one test case per key) to this file")
	flags.add(cmd.Flags(), "default: what the run was held to (its results.json's parameters)")
	cmd.SetFlagErrorFunc(flagError)
	return cmd
}
