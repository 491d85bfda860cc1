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
	"github.com/fencecheck/fencecheck/store"
)

func newAnalyzeCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "analyze FILE",
		Short: "Re-check a saved history (history.jsonl) without re-running anything",
		Example: `  check analyze store/latest/history.jsonl
  check analyze --check-timeout 10m big-history.jsonl`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErr("analyze takes one history file (e.g. store/latest/history.jsonl), got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			path := args[0]
			if st, err := os.Stat(path); err == nil && st.IsDir() {
				path = filepath.Join(path, store.HistoryFile)
			}
			h, err := history.LoadFile(path)
			if err != nil {
				return historyErr(path, err)
			}
			out := cmd.OutOrStdout()
			if note := h.Note(); note != "" {
				fmt.Fprintf(out, "%s: %s\n", path, note)
			}
			if h.Lines == 0 {
				fmt.Fprintf(out, "UNKNOWN: %s is empty: it holds no events (a run that stopped before its workload started leaves an empty history)\n", path)
				return &exitError{harness.ExitUnknown, fmt.Errorf("")}
			}
			events := h.Events
			ops, _ := history.Pair(events)
			sig, stop := signals()
			defer stop()
			start := time.Now()
			res := models.Check(sig.Stop, ops, models.Options{Timeout: timeout})
			reports.KeyLines(out, "", res.Keys)
			fmt.Fprintf(out, "%s: %d events checked in %s\n", path, len(events), time.Since(start).Round(time.Millisecond))
			switch res.Verdict {
			case models.Valid:
				fmt.Fprintln(out, "VALID")
			default:
				fmt.Fprintf(out, "%s: %s\n", map[models.Verdict]string{models.Invalid: "INVALID", models.Unknown: "UNKNOWN"}[res.Verdict], reports.Headline(res))
			}
			return &exitError{harness.ExitCode(res.Verdict), fmt.Errorf("")}
		},
	}
	cmd.Flags().DurationVar(&timeout, "check-timeout", 5*time.Minute, "bound on the search; past it the verdict is unknown")
	cmd.SetFlagErrorFunc(flagError)
	return cmd
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
