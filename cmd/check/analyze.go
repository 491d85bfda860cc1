package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/models/verdict"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/runstore"
)

func newAnalyzeCmd() *cobra.Command {
	var flags recheckFlags
	cmd := &cobra.Command{
		Use:   "analyze FILE",
		Short: "Re-check a saved history (history.jsonl) without re-running anything",
		Long: `analyze checks a saved history against the fenced-storage model as it reads
it, key by key, holding only the ops in flight: a history of any length is
checked in memory that does not grow with it. It exits 0 valid, 1 invalid,
2 unknown (the history is not a finished run's — no end event, a last line
cut short, ops still open — and shows no violation; or the check timed out,
reached --check-memory or was interrupted), 254 when the history is malformed
or a flag is out of range.`,
		Example: `  check analyze store/latest/history.jsonl
  check analyze --check-timeout 10m --check-memory 4GiB big-history.jsonl`,
		Args: oneArg("analyze", "one history file (e.g. store/latest/history.jsonl)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := flags.valid(); err != nil {
				return err
			}
			path := args[0]
			if st, err := os.Stat(path); err == nil && st.IsDir() {
				path = runstore.Run(path).History()
			}
			f, err := os.Open(path)
			if err != nil {
				return historyErr(path, err)
			}
			defer f.Close()
			abort, stop := checkSignals()
			defer stop()
			out := cmd.OutOrStdout()
			start := time.Now()
			res, read, err := models.CheckReader(abort, f, models.Options{Timeout: flags.timeout, MemoryLimit: flags.memory,
				OnViolation: func(k models.KeyResult) {
					fmt.Fprintf(out, "key %s: violation found after %s: %s\n", k.Key, time.Since(start).Round(time.Millisecond), k.Explanation)
				}})
			if err != nil {
				// A malformed history (*history.ParseError names the line)
				// or one that cannot be read.
				return historyErr(path, err)
			}
			if note := (&history.History{Dropped: read.Dropped}).Note(); note != "" {
				fmt.Fprintf(out, "%s: %s\n", path, note)
			}
			if read.Lines == 0 {
				fmt.Fprintf(out, "UNKNOWN: %s is empty: it holds no events (a run that stopped before its workload started leaves an empty history)\n", path)
				return &exitError{harness.ExitUnknown, fmt.Errorf("")}
			}
			// A history that is not a finished run's is never valid: a
			// violation in it stands, anything else is unknown.
			if read.Unfinished != "" {
				fmt.Fprintf(out, "%s: %s\n", path, read.Unfinished)
			}
			// A second read, for the cause the run itself names first.
			run := verdict.Run{Check: res, Unfinished: read.Unfinished,
				Reread: func() (io.ReadCloser, error) { return os.Open(path) }}
			if abort.Err() == nil {
				// A further pass counts the exposures as a stream, in
				// memory that does not grow with the history.
				if x, faults, err := countExposures(path); err == nil {
					run.Exposures, run.Facts, run.MinExposures = &x, models.RunFacts{Faults: faults}, flags.minExposures
				} else {
					fmt.Fprintf(out, "%s: exposures not counted: %v\n", path, err)
				}
			}
			run.Stopped = stopped(abort)
			res = verdict.Settle(run)
			reports.KeyLines(out, "", res.Keys)
			if x := res.Exposures; x != nil {
				fmt.Fprintf(out, "exposures: %s\n", reports.ExposureLine(x))
			}
			fmt.Fprintf(out, "%s: %d events checked in %s\n", path, read.Events, time.Since(start).Round(time.Millisecond))
			fmt.Fprintln(out, reports.VerdictLine(res))
			return &exitError{harness.ExitCode(res.Verdict), fmt.Errorf("")}
		},
	}
	flags.add(cmd.Flags(), "default 0: a bare history does not say which faults it was under")
	cmd.SetFlagErrorFunc(flagError)
	return cmd
}

// countExposures reads the history at path once more as a stream and
// counts its exposures; it keeps the fault intervals (few) to say why
// there were none.
func countExposures(path string) (models.Exposures, []history.Fault, error) {
	f, err := os.Open(path)
	if err != nil {
		return models.Exposures{}, nil, err
	}
	defer f.Close()
	c := models.NewExposureCounter()
	var nemesisEvents []history.Event
	_, err = history.LoadEach(f, func(e history.Event) error {
		c.Add(e)
		if e.IsNemesis() {
			nemesisEvents = append(nemesisEvents, e)
		}
		return nil
	})
	_, faults := history.Pair(nemesisEvents)
	return c.Result(), faults, err
}

// historyErr says why the history file at path cannot be read: a line
// that breaks the format (named), or a file that is missing or
// unreadable. Either is bad input, but no flag's fault.
func historyErr(path string, err error) error {
	var pe *history.ParseError
	switch {
	case errors.As(err, &pe):
		return dataErr("%s: %v (docs/history.md describes the format)", path, err)
	case errors.Is(err, fs.ErrNotExist):
		return dataErr("%s: no such file (give a history.jsonl, or a run directory such as store/latest)", path)
	}
	return dataErr("%v", err)
}

// stopped is why a re-check was stopped (an interrupt), nil when it was
// not: `check report` and `check analyze` settle such a check's verdict
// as unknown unless it found a violation.
func stopped(abort context.Context) error {
	if abort.Err() == nil {
		return nil
	}
	return context.Cause(abort)
}
