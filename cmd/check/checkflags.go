package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencecheck/fencecheck/harness"
)

// addCheckTimeoutFlag adds --check-timeout to a command that re-checks a
// stored history.
func addCheckTimeoutFlag(fs *pflag.FlagSet, v *time.Duration) {
	fs.DurationVar(v, "check-timeout", 5*time.Minute, "bound on the check's time (any positive duration, e.g. 10m); past it the verdict is unknown")
}

// checkTimeoutValid refuses a --check-timeout that is zero or negative:
// such a bound stops the check before it places a single op, so every
// verdict would be unknown. A run asks at least 1s, since its check
// follows a workload that a too-short bound would waste; a re-check of a
// stored history costs nothing to repeat, so any positive bound is one
// (a short one looks at the start of a big history).
func checkTimeoutValid(d time.Duration) error {
	if d <= 0 {
		return &exitError{harness.ExitUsage, fmt.Errorf("--check-timeout: %s must be positive (e.g. 10m): a bound of %s stops the check before it places an op, so every verdict would be unknown", d, d)}
	}
	return nil
}

// checkSignals is for the commands that only check a stored history
// (analyze, report): there is no workload to stop, so the first SIGINT or
// SIGTERM stops the check, and the verdict is unknown unless a violation
// was already found. The context ends at that signal, its cause saying so.
func checkSignals() (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		for s := range ch {
			fmt.Fprintf(os.Stderr, "\ncheck: %v: stopping the check; the verdict will be unknown unless a violation was already found\n", s)
			cancel(fmt.Errorf("the check was interrupted (%v) before it finished", s))
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		cancel(nil)
	}
}

// addMinExposuresFlag defines --min-exposures on the commands that
// re-check a stored history; def says where the default comes from.
func addMinExposuresFlag(fs *pflag.FlagSet, v *int, def string) {
	fs.IntVar(v, "min-exposures", 0, "a history with fewer exposures than this (moments a superseded lease holder's late op met the storage) is unknown, not valid ("+def+"; docs/results.md)")
}

// minExposuresValid refuses a negative --min-exposures.
func minExposuresValid(n int) error {
	if n < 0 {
		return &exitError{harness.ExitUsage, fmt.Errorf("--min-exposures: must be 0 or more, got %d (0 lets a history that put safety at stake nowhere pass; 1 asks for at least one)", n)}
	}
	return nil
}

// recheckFlags are the flags the commands that re-check a stored history
// (analyze, report) share, defined and checked in one place so that the
// two cannot drift apart.
type recheckFlags struct {
	timeout      time.Duration
	memory       int64
	minExposures int
}

// add defines --check-timeout, --check-memory and --min-exposures;
// minDefault says where --min-exposures' default comes from.
func (f *recheckFlags) add(fs *pflag.FlagSet, minDefault string) {
	addCheckTimeoutFlag(fs, &f.timeout)
	addCheckMemoryFlag(fs, &f.memory)
	addMinExposuresFlag(fs, &f.minExposures, minDefault)
}

// valid refuses the values no re-check can use (see checkTimeoutValid and
// minExposuresValid).
func (f *recheckFlags) valid() error {
	if err := checkTimeoutValid(f.timeout); err != nil {
		return err
	}
	return minExposuresValid(f.minExposures)
}

// oneArg accepts exactly one argument; what names it, with an example, in
// the usage error ("one run directory (e.g. store/latest)").
func oneArg(name, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usageErr("%s takes %s, got %d arguments", name, what, len(args))
		}
		return nil
	}
}
