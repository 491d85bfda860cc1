// Command check tests whether a distributed lock is actually safe: it runs
// clients through lock → read → write → release against a real lock
// service while injecting faults, records every op, and checks the history
// against a model of correctly fenced storage. This package parses flags,
// turns bad ones into exit 254, calls harness, compare, models and reports,
// and maps what they return to exit codes; the one loop of its own is
// --test-count's (repeat.go), which runs the harness once per seed and
// keeps the worst outcome.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	_ "github.com/fencecheck/fencecheck/backends/all" // the backends this binary runs
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func usageErr(format string, args ...any) error {
	return &exitError{harness.ExitUsage, fmt.Errorf(format, args...)}
}

// dataError is a file given as input that cannot be used (missing,
// malformed): exit 254 like a bad flag, but its message says what is
// wrong with the file, since the flags' help would not.
type dataError struct{ error }

func dataErr(format string, args ...any) error {
	return &exitError{harness.ExitUsage, &dataError{fmt.Errorf(format, args...)}}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	code := harness.ExitUsage // cobra's own errors are bad arguments
	var ee *exitError
	var ue *usage.Error
	switch {
	case errors.As(err, &ee):
		code = ee.code
		err = ee.err
	case errors.As(err, &ue):
		code = harness.ExitUsage
	}
	if err.Error() != "" {
		fmt.Fprintf(stderr, "check: %v\n", err)
	}
	var de *dataError
	if code == harness.ExitUsage && !errors.As(err, &de) {
		// The help of the command that was given: a subcommand's flags
		// are not the main command's.
		path := root.CommandPath()
		if cmd != nil && cmd.Name() != "help" {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "(run %s --help for every flag and its accepted values)\n", path)
	}
	return code
}

// interruptible is ctx ended by the first SIGINT or SIGTERM, for commands
// with a single thing to stop (an image build, bringing a cluster up).
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// signals turns the first SIGINT/SIGTERM into Stop and the second into
// Abort, and prints what each does.
func signals() (harness.Signals, func()) {
	stop, cancelStop := context.WithCancel(context.Background())
	abort, cancelAbort := context.WithCancel(context.Background())
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		n := 0
		for s := range ch {
			n++
			if n == 1 {
				fmt.Fprintf(os.Stderr, "\ncheck: %v: stopping the workload, healing every fault, then checking what was recorded (again to skip the check)\n", s)
				cancelStop()
			} else {
				fmt.Fprintf(os.Stderr, "\ncheck: %v: skipping the check; the verdict will be unknown\n", s)
				cancelAbort()
			}
		}
	}()
	return harness.Signals{Stop: stop, Abort: abort}, func() {
		signal.Stop(ch)
		cancelStop()
		cancelAbort()
	}
}
