package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/compare"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/runstore"
)

func newCompareMergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge [--out DIR] DIR...",
		Short: "Combine the shards of a comparison (check compare --shard I/N) into one page",
		Long: `merge reads the partial compare.json of every shard directory given (the
--store of each 'check compare --shard I/N' run) and writes into --out the
compare.html, compare.md and compare.json that one machine running the whole
matrix would have written, each cell summarized from its runs as 'check
compare' does. Links to the runs' reports are relative to --out, so they
keep working when the shard directories sit side by side (as CI artifacts
do) next to --out.

It refuses, before writing anything, shards of different matrices (naming
the flag that differs), shards cut into different numbers, and a shard given
twice. When a shard did not come back (or stopped early), the page is still
written, and both it and the output list the missing runs.

Exit codes: 0 every run is there; 2 runs are missing, or a run a shard
called valid has a history that does not end with the end event (it did not
finish, and counts as unknown): the comparison is incomplete, as an unknown
verdict; 255 a run could not be carried out or a
shard was interrupted; 254 bad arguments or shards that do not fit.`,
		Example: `  check compare merge --out merged shard-1 shard-2 shard-3
  check compare merge --out public artifacts/fencecheck-shard-*`,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("merge needs the shard directories: check compare merge --out DIR shard-1 shard-2 ...")
			}
			c, err := compare.Merge(args, out)
			var refused *compare.ShardError
			if errors.As(err, &refused) {
				return dataErr("%v", err)
			}
			if err != nil {
				if c != nil {
					return &exitError{harness.ExitFailed, err}
				}
				return err
			}
			w := cmd.OutOrStdout()
			runs := 0
			for _, s := range c.Sources {
				runs += s.Runs
			}
			fmt.Fprintf(w, "merge: %s, %s: %s\n", words.Plural(len(c.Sources), "shard"), words.Plural(runs, "run"), runstore.Comparison(out).HTML())
			if len(c.Missing) > 0 {
				if gone := compare.MissingShards(c); len(gone) > 0 {
					fmt.Fprintf(w, "merge: shard(s) %s did not come back\n", strings.Join(gone, ", "))
				}
				fmt.Fprintf(w, "merge: %s missing:\n", words.Plural(len(c.Missing), "run"))
				for _, m := range c.Missing {
					fmt.Fprintf(w, "  %s\n", m)
				}
			}
			if len(c.Unfinished) > 0 {
				fmt.Fprintf(w, "merge: %s called valid but not shown to have finished (counted as unknown):\n", words.Plural(len(c.Unfinished), "run"))
				for _, u := range c.Unfinished {
					fmt.Fprintf(w, "  %s\n", u)
				}
			}
			switch code := compare.MergeExitCode(c); code {
			case 0:
				return nil
			case compare.ExitMissing:
				var why []string
				if len(c.Missing) > 0 {
					why = append(why, words.Plural(len(c.Missing), "run")+" missing")
				}
				if len(c.Unfinished) > 0 {
					why = append(why, words.Plural(len(c.Unfinished), "run")+" not shown to have finished")
				}
				return &exitError{code, fmt.Errorf("%s (see %s)", strings.Join(why, ", "), runstore.Comparison(out).Markdown())}
			default:
				why := words.Plural(c.Errors, "run") + " could not be carried out"
				if c.Interrupted {
					why = "a shard was interrupted before every cell ran"
				}
				return &exitError{code, fmt.Errorf("%s (see %s)", why, runstore.Comparison(out).Markdown())}
			}
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", ".", "directory for the merged compare.html, compare.md and compare.json")
	cmd.SetFlagErrorFunc(flagError)
	return cmd
}
