package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/runstore"
)

// Signals are the two stages of an interrupt: the first (Stop) ends the
// workload early and goes on to heal, check and report what was recorded;
// the second (Abort) also gives up the check, so the verdict is unknown.
type Signals struct {
	Stop, Abort context.Context
}

// Outcome is what a run produced.
type Outcome struct {
	Dir    string
	Result models.Result
	// Interrupted: a signal came before the report (in setup, the
	// workload, the final reads or the check); what was recorded stands.
	Interrupted bool
	// Incomplete says why the run did not do everything a verdict of
	// valid needs — the workload cut short before its time limit, the
	// final reads skipped or cut short — and is "" when it did. The
	// verdict of an incomplete run is unknown unless a violation was
	// found (see Settle).
	Incomplete string
	// TestID labels the run's Docker objects ("" in process).
	TestID string
	// Report is what the run's reports were made from — the history as
	// recorded, its ops and faults, the parameters and the verdict — kept
	// in memory for callers that summarize runs (compare) so that nothing
	// just written is read back. Nil when the run ended before its report.
	Report *reports.Run
}

// Exit codes, as Jepsen's.
const (
	ExitValid   = 0
	ExitInvalid = 1
	ExitUnknown = 2
	ExitUsage   = 254
	ExitFailed  = 255
)

// ExitCode maps a verdict to the process exit code.
func ExitCode(v models.Verdict) int {
	switch v {
	case models.Valid:
		return ExitValid
	case models.Invalid:
		return ExitInvalid
	}
	return ExitUnknown
}

// Run carries out one test and writes its store directory. progress gets
// the log lines a person at a terminal wants; the full log goes to
// check.log. An error means the test could not be carried out (exit 255);
// even then the history recorded so far is on disk, and results.json and
// the report say what happened (verdict unknown).
//
// Interrupts, phase by phase (see docs/reliability.md): the first signal
// (sig.Stop) ends setup, the workload or the final reads at once, heals
// every fault and tears the cluster down, then checks and reports what was
// recorded; the second (sig.Abort) also skips the check, so the verdict is
// unknown. A signal during the report changes nothing: the files are
// finished, since a half-written report is worse than a late one.
func Run(sig Signals, cfg Config, progress io.Writer) (*Outcome, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sig.Stop == nil {
		sig.Stop = context.Background()
	}
	if sig.Abort == nil {
		sig.Abort = context.Background()
	}
	// A second signal implies the first.
	stop, cancelStop := context.WithCancel(sig.Stop)
	defer cancelStop()
	defer context.AfterFunc(sig.Abort, cancelStop)()

	started := time.Now()
	dir, err := runstore.NewRun(cfg.Store, cfg.Name, started)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Dir: dir}
	if cfg.Cluster == registry.ClusterDocker {
		if cfg.testID == "" {
			cfg.testID = testID(&cfg, started)
		}
		out.TestID = cfg.testID
	}
	logFile, err := os.Create(filepath.Join(dir, runstore.LogFile))
	if err != nil {
		return out, fmt.Errorf("creating check.log: %w", err)
	}
	defer logFile.Close()
	var logMu sync.Mutex
	con := newConsole(progress)
	defer con.Clear()
	logTo := func(toConsole bool, format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		line := fmt.Sprintf("%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
		logFile.WriteString(line)
		if toConsole {
			con.Line(line)
		}
	}
	logf := func(format string, args ...any) { logTo(true, format, args...) }
	// On a terminal the periodic progress lives in the status line; the
	// log file (and a CI log) get a plain line every few seconds.
	progressf := func(format string, args ...any) { logTo(!con.tty, format, args...) }
	logf("test %s, seed %d, store %s", cfg.Name, cfg.Seed, dir)

	histFile, err := os.Create(filepath.Join(dir, runstore.HistoryFile))
	if err != nil {
		return out, fmt.Errorf("creating history.jsonl: %w", err)
	}
	var rec *history.Recorder
	closeHistory := func() error {
		var err error
		if rec != nil {
			err = rec.Err()
		}
		if serr := histFile.Sync(); err == nil && serr != nil {
			err = serr
		}
		if cerr := histFile.Close(); err == nil && cerr != nil {
			err = cerr
		}
		return err
	}

	// runErr is the first reason the run could not be carried out; later
	// errors only go to the log.
	var runErr error
	// done says how the workload phases went (zero when setup failed).
	var done phasesDone
	fail := func(err error) {
		if err == nil {
			return
		}
		if runErr == nil {
			runErr = err
			return
		}
		logf("also: %v", err)
	}
	// interrupted names the phase a signal cut short.
	interrupted := func(phase string, err error) error {
		if stop.Err() != nil {
			return fmt.Errorf("interrupted during %s: %w", phase, err)
		}
		return err
	}

	logf("setting up %s (%s, storage %s, fencing %s)", cfg.Backend, cfg.Cluster, cfg.Storage, cfg.fencingLabel())
	cfg.phase("setup")
	sys, err := openSystem(stop, &cfg, dir, logf, progress)
	if err == nil && stop.Err() != nil {
		// Set up, but too late: the signal came while it was going on.
		err = stop.Err()
		if cerr := sys.Close(context.Background()); cerr != nil {
			logf("tearing down: %v", cerr)
		}
		sys = nil
	}
	if err != nil {
		sys = nil // not a typed nil: nothing to describe or close
		fail(interrupted("setup", fmt.Errorf("setting up the system under test: %w", err)))
	} else {
		// The history's time zero is the start of the workload.
		rec = history.NewRecorder(histFile)
		cfg.live = startLive(&cfg, rec, logf)
		done, runErr = runWorkloadPhases(stop, &cfg, sys, rec, logf, progressf, con)
		cfg.live.wait()
		out.Interrupted, out.Incomplete = done.interrupted, done.incomplete
		if out.Incomplete != "" {
			logf("the run is incomplete: %s", out.Incomplete)
		}
		cfg.phase("teardown")
		if err := sys.Close(context.Background()); err != nil {
			fail(fmt.Errorf("tearing down: %w", err))
		}
	}
	if cfg.Cluster == registry.ClusterDocker && cfg.clusterAsked {
		if hint := leftoverHint(cfg.testID, cfg.KeepCluster); hint != "" {
			logf("%s", hint)
			if runErr == nil {
				runErr = errors.New(hint)
			} else {
				runErr = fmt.Errorf("%w\n%s", runErr, hint)
			}
		}
	}
	if err := closeHistory(); err != nil {
		// The history's own error comes first: without it nothing else
		// the run says can be trusted.
		herr := fmt.Errorf("the history could not be saved: %w", err)
		if runErr != nil {
			logf("also: %v", runErr)
		}
		runErr = herr
	}
	n := int64(0)
	if rec != nil {
		n = rec.Len()
	}
	logf("recorded %d events", n)

	cfg.phase("check")
	events, err := history.ParseFile(filepath.Join(dir, runstore.HistoryFile))
	if err != nil {
		fail(fmt.Errorf("reading back the history: %w", err))
	}
	ops, faultIntervals := history.Pair(events)
	logf("checking %d ops", len(ops))
	con.Status(fmt.Sprintf("checking %d ops against the fenced-storage model…", len(ops)))
	checkStart := time.Now()
	out.Result = models.Check(sig.Abort, ops, models.Options{Timeout: cfg.CheckTimeout, MemoryLimit: cfg.CheckMemory})
	out.Result = models.StaleWriteFirst(out.Result, ops)
	checkTime := time.Since(checkStart)
	runErrText := ""
	if runErr != nil {
		runErrText = runErr.Error()
	}
	out.Result = Settle(out.Result, out.Incomplete, runErrText, sig.Abort.Err() != nil)
	if cfg.live.foundViolation() && out.Result.Verdict == models.Valid {
		// Cannot happen: a violation in a prefix of the history stays one
		// in the whole (an op still in flight was read as unknown, the most
		// lenient reading). Should the two checks ever disagree, the run
		// must not pass — above all one that --stop-on-violation shortened;
		// every Docker test's run goes through here, so each one checks it.
		out.Result.Verdict = models.Unknown
		out.Result.Explanation = "the live check found a violation that the check of the whole history did not confirm: a bug in fencecheck, please report it with this history"
	}
	out.Interrupted = out.Interrupted || stop.Err() != nil
	con.Clear()
	logf("verdict %s in %s", out.Result.Verdict, checkTime.Round(time.Millisecond))

	// From here on signals change nothing: the files are finished.
	cfg.phase("report")
	r := &reports.Run{
		Dir: dir, Name: cfg.Name, Started: started, Duration: time.Since(started), CheckTime: checkTime,
		Params: params(&cfg, sysInfo(sys, &cfg)), Command: cfg.Command,
		Events: events, Ops: ops, Faults: faultIntervals, Result: out.Result, Interrupted: out.Interrupted,
		Incomplete: out.Incomplete,
	}
	if runErr != nil {
		r.Error = runErr.Error()
	}
	out.Report = r
	if err := reports.WriteAll(r); err != nil {
		logf("writing the reports: %v", err)
		fail(fmt.Errorf("writing the reports: %w", err))
	}
	if cfg.JUnit != "" {
		if err := reports.WriteJUnitFile(cfg.JUnit, r); err != nil {
			logf("writing %s: %v", cfg.JUnit, err)
			fail(err)
		}
	}
	if err := reports.WriteStepSummary(os.Getenv(reports.StepSummaryEnv), r); err != nil {
		logf("writing the step summary: %v", err)
	}
	if progress != nil {
		con.Clear()
		reports.Summary(progress, r)
	}
	return out, runErr
}

// Settle is the verdict of a run, from the check's result and how the run
// went; `check report` settles a stored run the same way. A violation the
// check found stands whatever happened: the history that shows it is real.
// Anything else is unknown when the check was skipped (checkSkipped: a
// second interrupt), the run could not be carried out (runErr), or the run
// was incomplete (incomplete: the workload did not reach its time limit, or
// the final reads did not happen or were cut short) — "no violation in the
// seconds that ran" is information, not a verdict. Per-key results are
// kept as they are.
func Settle(res models.Result, incomplete, runErr string, checkSkipped bool) models.Result {
	if res.Verdict == models.Invalid {
		return res
	}
	switch {
	case checkSkipped:
		res.Verdict = models.Unknown
		res.Explanation = "the check was skipped: interrupted a second time"
	case runErr != "":
		res.Verdict = models.Unknown
		res.Explanation = "the run did not complete: " + runErr
	case incomplete != "" && res.Verdict == models.Valid:
		res.Verdict = models.Unknown
		res.Explanation = incomplete + ": no violation in what ran, but the run did not finish"
	case incomplete != "":
		// The check did not finish either: say both.
		res.Explanation = incomplete + "; and " + res.Explanation
	}
	return res
}

// sysInfo describes the system for the report; a system that could not be
// set up is described by its test id alone.
func sysInfo(sys System, cfg *Config) map[string]string {
	if sys != nil {
		return sys.Info()
	}
	if cfg.testID != "" {
		return map[string]string{"docker test id": cfg.testID}
	}
	return nil
}

// params lists everything needed to rerun the test, in a stable order.
func params(cfg *Config, info map[string]string) []reports.Param {
	recipe := cfg.Recipe
	if cfg.client != nil {
		recipe = cfg.client.Manifest.Name + " (client)"
	}
	p := []reports.Param{
		{Name: "backend", Value: cfg.Backend}, {Name: "recipe", Value: recipe}, {Name: "storage", Value: cfg.Storage}, {Name: "fencing", Value: cfg.fencingLabel()},
		{Name: "nemesis", Value: strings.Join(cfg.Nemesis, ",")}, {Name: "clients", Value: fmt.Sprint(cfg.Clients)}, {Name: "keys", Value: fmt.Sprint(cfg.Keys)},
		{Name: "cluster", Value: string(cfg.Cluster)}, {Name: "nodes", Value: fmt.Sprint(cfg.Nodes)}, {Name: "server-version", Value: cfg.ServerVersion}, {Name: "time-limit", Value: cfg.TimeLimit.String()}, {Name: "lease-ttl", Value: cfg.LeaseTTL.String()},
		{Name: "work", Value: cfg.Work.String()}, {Name: "hold", Value: cfg.Hold.String()}, {Name: "pause-duration", Value: cfg.PauseDuration.String()},
		{Name: "nemesis-interval", Value: cfg.NemesisInterval.String()}, {Name: "op-timeout", Value: cfg.OpTimeout.String()},
		{Name: "check-timeout", Value: cfg.CheckTimeout.String()}, {Name: "check-memory", Value: models.FormatBytes(cfg.CheckMemory)},
	}
	for _, o := range registry.Options() {
		p = append(p, reports.Param{Name: o.Flag, Value: cfg.Options[o.Flag]})
	}
	for _, f := range nemesis.Flags() {
		p = append(p, reports.Param{Name: f.Name, Value: cfg.Options[f.Name]})
	}
	if cl := cfg.client; cl != nil {
		p = append(p, reports.Param{Name: "client", Value: cl.Manifest.Name}, reports.Param{Name: "client-dir", Value: cfg.ClientDir},
			reports.Param{Name: "client-hash", Value: cl.Hash()})
	}
	p = append(p, reports.Param{Name: "seed", Value: fmt.Sprint(cfg.Seed)})
	for _, k := range sortedKeys(info) {
		p = append(p, reports.Param{Name: k, Value: info[k]})
	}
	return p
}
