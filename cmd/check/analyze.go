package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
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
				path = filepath.Join(path, "history.jsonl")
			}
			events, err := history.ParseFile(path)
			if err != nil {
				var pe *history.ParseError
				if errors.As(err, &pe) {
					return usageErr("%s: %v", path, err)
				}
				return usageErr("%v", err)
			}
			ops, _ := history.Pair(events)
			sig, stop := signals()
			defer stop()
			start := time.Now()
			res := models.Check(sig.Stop, ops, models.Options{Timeout: timeout})
			out := cmd.OutOrStdout()
			for _, k := range res.Keys {
				fmt.Fprintf(out, "key %-6s %-8s (%d ops, %d ms)\n", k.Key, k.Verdict, k.Ops, k.CheckMillis)
			}
			fmt.Fprintf(out, "%s: %d events checked in %s\n", path, len(events), time.Since(start).Round(time.Millisecond))
			switch res.Verdict {
			case models.Valid:
				fmt.Fprintln(out, "VALID")
			default:
				fmt.Fprintf(out, "%s: %s\n", map[models.Verdict]string{models.Invalid: "INVALID", models.Unknown: "UNKNOWN"}[res.Verdict], res.Explanation)
			}
			return &exitError{harness.ExitCode(res.Verdict), fmt.Errorf("")}
		},
	}
	cmd.Flags().DurationVar(&timeout, "check-timeout", 5*time.Minute, "bound on the search; past it the verdict is unknown")
	cmd.SetFlagErrorFunc(flagError)
	return cmd
}
