package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/models/verdict"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/runstore"
)

// Signals are the two stages of an interrupt: the first (Stop) ends the
// workload early and goes on to heal, check and report what was recorded;
// the second (Abort) also gives up the check, so the verdict is unknown.
type Signals struct {
	Stop, Abort context.Context
}

// RunResult is what a run produced.
type RunResult struct {
	Dir    string
	Result models.Result
	// Interrupted: a signal came before the report (in setup, the
	// workload, the final reads or the check); what was recorded stands.
	Interrupted bool
	// Incomplete says why the run did not do everything a verdict of
	// valid needs — the workload cut short before its time limit, the
	// final reads skipped or cut short — and is "" when it did. The
	// verdict of an incomplete run is unknown unless a violation was
	// found (see verdict.Settle).
	Incomplete string
	// TestID labels the run's Docker objects ("" in process).
	TestID string
	// Workload is how long the workload phase lasted (0 when it never
	// began): what a rate of exposures a minute is per.
	Workload time.Duration
	// Unwritten names the outputs written after the check that could not
	// be (the reports, --junit, the step summary), each with why. They
	// leave the verdict as it is: Run still returns it.
	Unwritten []string
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

// Run carries out one test and writes its store directory: Resolve, then
// RunTest. progress gets the log lines a person at a terminal wants; the
// full log goes to check.log. Bad input is a *usage.Error (exit 254),
// returned before anything is created; any other error means the test
// could not be carried out (exit 255), and even then the history recorded
// so far is on disk, and results.json and the report say what happened
// (verdict unknown).
//
// Interrupts, phase by phase (see docs/reliability.md): the first signal
// (sig.Stop) ends setup, the workload or the final reads at once, heals
// every fault and tears the cluster down, then checks and reports what was
// recorded; the second (sig.Abort) also skips the check, so the verdict is
// unknown. A signal during the report changes nothing: the files are
// finished, since a half-written report is worse than a late one.
func Run(sig Signals, cfg Config, progress io.Writer) (*RunResult, error) {
	return runWith(sig, cfg, progress, &runState{})
}

// RunTest carries out a resolved test, as Run does.
func RunTest(sig Signals, t *Test, progress io.Writer) (*RunResult, error) {
	return runTest(sig, t, progress, &runState{})
}

// runWith is Run with the state a test may set beforehand (a test id, a
// hook at each phase).
func runWith(sig Signals, cfg Config, progress io.Writer, st *runState) (*RunResult, error) {
	t, err := Resolve(cfg)
	if err != nil {
		return nil, err
	}
	return runTest(sig, t, progress, st)
}

// runTest is RunTest with the run's state.
func runTest(sig Signals, t *Test, progress io.Writer, st *runState) (*RunResult, error) {
	if !t.outputsChecked {
		if err := checkOutputs(&t.cfg); err != nil {
			return nil, err
		}
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

	r := &run{t: t, runState: st, sig: sig, stop: stop, progress: progress, started: time.Now()}
	if err := r.open(); err != nil {
		return r.out, err
	}
	defer r.logFile.Close()
	defer r.con.Clear()
	r.setUpAndRun()
	if r.out != nil {
		r.out.Workload = r.marks.length("workload", time.Now())
	}
	r.leftovers()
	r.saveHistory()
	r.check()
	// From here on signals change nothing: the files are finished.
	r.report()
	r.logTo(false, "%s", r.marks.split(r.started, time.Now()))
	return r.out, r.err
}

// runState is what a run learns about itself, apart from what the user
// asked for (Config).
type runState struct {
	// testID labels a Docker run's objects; Run sets it (tests may
	// choose it).
	testID string
	// clusterAsked is set once the Docker daemon has been asked to create
	// the cluster: before that nothing of testID can exist, and there is
	// nothing left behind to look for.
	clusterAsked bool
	// phaseHook, when a test sets it, is called at the start of each phase
	// of Run: setup, image, cluster, servers (Docker only), workload, heal,
	// final reads, teardown, check, report. Tests use it to interrupt a
	// run exactly there; the CLI never sets it.
	phaseHook func(phase string)
	// recordHook, when a test sets it, hears every event recorded, under
	// the recorder's lock (history.Recorder.Observe): it must not block or
	// record. Tests use it to interrupt a run at an op, where a timer
	// would depend on the machine's speed; the CLI never sets it.
	recordHook func(history.Event)
	// marks are when each phase began, for the log's time split.
	marks timeMarks
	// clusters, when set, holds warm clusters this run may take and give
	// back (Clusters.Run); reused says it took one.
	clusters *Clusters
	reused   bool
	// keepWarm: the run ended cleanly (no error, no interrupt), so its
	// cluster may be given back to clusters.
	keepWarm bool
	// pooled: the run gave its cluster back, so it is not left behind.
	pooled bool
}

// phase marks the start of a phase of Run.
func (s *runState) phase(name string) {
	s.marks.mark(name)
	if s.phaseHook != nil {
		s.phaseHook(name)
	}
}

// run is one test being carried out: the Test resolved from what the
// user asked for and everything Run learns and makes on the way, phase by
// phase. The phases are its methods.
type run struct {
	t *Test
	*runState
	sig      Signals
	stop     context.Context // sig.Stop, also ended by sig.Abort
	progress io.Writer
	started  time.Time
	dir      runstore.Run
	out      *RunResult

	logFile  *os.File
	logMu    sync.Mutex
	con      *console
	histFile *os.File
	rec      *history.Recorder // nil until the system is set up
	sys      System            // nil when it could not be set up
	live     *liveCheck

	// err is the first reason the run could not be carried out; later
	// errors only go to the log.
	err error

	events    []history.Event
	ops       []history.Op
	faults    []history.Fault
	checkTime time.Duration
	// servers is what the servers said they are (nil when not asked).
	servers *reports.Servers
	// state is what the servers held at the end (nil when not asked).
	state *models.ServiceState
	// endedBy says what ended the workload (phasesDone.endedBy).
	endedBy string
	// drops are what each power cut dropped (cutDrops); nil without one.
	drops []models.Drop
}

// open makes the run's directory, its log and its history file.
func (r *run) open() error {
	cfg := &r.t.cfg
	dir, err := runstore.NewRun(cfg.Store, cfg.Name, r.started)
	if err != nil {
		return err
	}
	r.dir = dir
	r.out = &RunResult{Dir: string(dir)}
	if cfg.Cluster == registry.ClusterDocker {
		if r.testID == "" {
			r.testID = testID(cfg, r.started)
		}
		r.out.TestID = r.testID
	}
	if r.logFile, err = os.Create(dir.Log()); err != nil {
		return fmt.Errorf("creating check.log: %w", err)
	}
	r.con = newConsole(r.progress)
	r.logf("test %s, seed %d, store %s", cfg.Name, cfg.Seed, dir)
	if r.histFile, err = os.Create(dir.History()); err != nil {
		r.logFile.Close()
		r.con.Clear()
		return fmt.Errorf("creating history.jsonl: %w", err)
	}
	return nil
}

func (r *run) logTo(toConsole bool, format string, args ...any) {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	line := fmt.Sprintf("%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	r.logFile.WriteString(line)
	if toConsole {
		r.con.Line(line)
	}
}

// logf writes a line to check.log and the terminal.
func (r *run) logf(format string, args ...any) { r.logTo(true, format, args...) }

// logFileOnly writes a line to check.log alone: what would bury the
// terminal (a compaction a second) but a reader of the log wants.
func (r *run) logFileOnly(format string, args ...any) { r.logTo(false, format, args...) }

// progressf writes the periodic progress: on a terminal it lives in the
// status line; the log file (and a CI log) get a plain line every few
// seconds.
func (r *run) progressf(format string, args ...any) { r.logTo(!r.con.tty, format, args...) }

// fail keeps the first reason the run could not be carried out and logs
// the later ones.
func (r *run) fail(err error) {
	if err == nil {
		return
	}
	if r.err == nil {
		r.err = err
		return
	}
	r.logf("also: %v", err)
}

// setUpAndRun sets the system up, runs the workload phases on it and
// tears it down.
func (r *run) setUpAndRun() {
	cfg := &r.t.cfg
	where := string(cfg.Cluster)
	if cfg.Hosts != "" {
		where = "your hosts in " + cfg.Hosts
	}
	r.logf("setting up %s (%s, storage %s, fencing %s)", cfg.Backend, where, cfg.Storage, r.t.fencingLabel())
	r.phase("setup")
	sys, err := r.systemSetup().open(r.stop)
	if err == nil && r.stop.Err() != nil {
		// Set up, but too late: the signal came while it was going on.
		err = r.stop.Err()
		if cerr := sys.Close(context.Background()); cerr != nil {
			r.logf("tearing down: %v", cerr)
		}
	}
	if err != nil {
		// r.sys stays nil (not a typed nil): nothing to describe or close.
		var bad *usage.Error
		if errors.As(err, &bad) && r.stop.Err() == nil {
			// Bad input only the system could tell (an endpoint that
			// does not answer): exit 254, named as given.
			r.fail(bad)
			return
		}
		if r.stop.Err() != nil {
			err = fmt.Errorf("interrupted during setup: %w", fmt.Errorf("setting up the system under test: %w", err))
		} else {
			err = fmt.Errorf("setting up the system under test: %w", err)
		}
		r.fail(err)
		return
	}
	r.sys = sys
	// A warm cluster carries the id it was made with.
	r.out.TestID = r.testID
	// The history's time zero is the start of the workload.
	r.rec = history.NewRecorder(r.histFile)
	if r.recordHook != nil {
		r.rec.Observe(r.recordHook)
	}
	r.live = startLive(r.t, r.rec, r.logf)
	var done phasesDone
	done, r.err = r.workloadPhases()
	endHistory(r.rec, done, r.err, r.logf)
	r.live.wait()
	// Every fault is healed: ask the servers what they are before they
	// are torn down, briefly after an interrupt; a second signal cuts the
	// question short.
	r.marks.mark("versions")
	r.servers = r.askServers()
	if r.err == nil && done.incomplete == "" && !done.interrupted {
		r.state = r.askAgreement()
	}
	r.out.Interrupted, r.out.Incomplete = done.interrupted, done.incomplete
	r.endedBy = done.endedBy
	if r.out.Incomplete != "" {
		r.logf("the run is incomplete: %s", r.out.Incomplete)
	}
	r.phase("teardown")
	r.keepWarm = r.err == nil && r.stop.Err() == nil
	if err := sys.Close(context.Background()); err != nil {
		r.fail(fmt.Errorf("tearing down: %w", err))
	}
}

// systemSetup is what setting the run's system up needs of it.
func (r *run) systemSetup() systemSetup {
	return systemSetup{t: r.t, st: r.runState, dir: r.dir, logf: r.logf, record: func(line string) { r.logTo(false, "%s", line) }, progress: r.progress}
}

// leftovers names what a Docker run may have left behind, once the
// daemon was asked to create the cluster.
func (r *run) leftovers() {
	cfg := &r.t.cfg
	if cfg.Cluster != registry.ClusterDocker || !r.clusterAsked {
		return
	}
	if hint := leftoverHint(r.testID, cfg.KeepCluster || r.pooled); hint != "" {
		r.logf("%s", hint)
		if r.err == nil {
			r.err = errors.New(hint)
		} else {
			r.err = fmt.Errorf("%w\n%s", r.err, hint)
		}
	}
}

// saveHistory syncs and closes the history file.
func (r *run) saveHistory() {
	var err error
	if r.rec != nil {
		err = r.rec.Err()
	}
	if serr := r.histFile.Sync(); err == nil && serr != nil {
		err = serr
	}
	if cerr := r.histFile.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		// The history's own error comes first: without it nothing else
		// the run says can be trusted.
		herr := fmt.Errorf("the history could not be saved: %w", err)
		if r.err != nil {
			r.logf("also: %v", r.err)
		}
		r.err = herr
	}
	n := int64(0)
	if r.rec != nil {
		n = r.rec.Len()
	}
	r.logf("recorded %d events", n)
}

// check reads the history back, checks it and settles the verdict.
func (r *run) check() {
	cfg, out := &r.t.cfg, r.out
	r.phase("check")
	events, err := history.ParseFile(r.dir.History())
	if err != nil {
		r.fail(fmt.Errorf("reading back the history: %w", err))
	}
	r.events = events
	r.ops, r.faults = history.Pair(events)
	// Every client op is counted here; a key's line later counts the
	// ones its check had to place (releases and plain failures change
	// nothing and are not placed).
	r.logf("checking %d client ops", len(r.ops))
	r.con.Status(fmt.Sprintf("checking %d client ops against the fenced-storage model…", len(r.ops)))
	checkStart := time.Now()
	checked := models.Check(r.sig.Abort, r.ops, models.Options{Timeout: cfg.CheckTimeout, MemoryLimit: cfg.CheckMemory})
	r.checkTime = time.Since(checkStart)
	runErrText := ""
	if r.err != nil {
		runErrText = r.err.Error()
	}
	x := models.CountExposures(r.events)
	out.Result = verdict.Settle(verdict.Run{
		Check: checked, Ops: r.ops, Unfinished: out.Incomplete, Failed: runErrText, CheckSkipped: r.sig.Abort.Err() != nil,
		Exposures: &x, MinExposures: cfg.MinExposures, Agreement: agreementOf(r.state, r.ops), Drops: r.drops,
		Facts: models.RunFacts{Nemesis: cfg.Nemesis, Faults: r.faults, LeaseTTL: cfg.LeaseTTL, Slots: cfg.Clients, GrantAfterEachCrash: cfg.GrantAfterEachCrash, Beliefs: models.Beliefs(r.ops, historyEnd(r.events))},
	})
	if r.live.foundViolation() && out.Result.Verdict == models.Valid {
		// Cannot happen: a violation in a prefix of the history stays one
		// in the whole (an op still in flight was read as unknown, the most
		// lenient reading). Should the two checks ever disagree, the run
		// must not pass — above all one that --stop-on-violation shortened;
		// every Docker test's run goes through here, so each one checks it.
		out.Result.Verdict = models.Unknown
		out.Result.Explanation = "the live check found a violation that the check of the whole history did not confirm: a bug in fencecheck, please report it with this history"
	}
	out.Interrupted = out.Interrupted || r.stop.Err() != nil
	r.con.Clear()
	r.logf("verdict %s in %s", out.Result.Verdict, r.checkTime.Round(time.Millisecond))
}

// report writes the run's files, the JUnit XML and the step summary
// asked for, and the summary on the terminal.
func (r *run) report() {
	cfg, out := &r.t.cfg, r.out
	r.phase("report")
	rep := &reports.Run{
		Dir: string(r.dir), Name: cfg.Name, Started: r.started, Duration: time.Since(r.started), CheckTime: r.checkTime,
		Params: r.t.params(sysInfo(r.sys, r.testID)), Command: r.t.outputs.Command, CommandArgv: r.t.outputs.CommandArgv,
		Events: r.events, Ops: r.ops, Faults: r.faults, Result: out.Result, Interrupted: out.Interrupted,
		Incomplete: out.Incomplete, Servers: r.servers, ExpiredGrants: expiredGrants(r.t, r.events),
		EndedBy: r.endedBy,
	}
	if r.err != nil {
		rep.Error = r.err.Error()
	}
	out.Report = rep
	out.Unwritten = reports.WriteOutputs(rep, r.t.outputs.JUnit, os.Getenv(reports.StepSummaryEnv))
	for _, u := range out.Unwritten {
		r.logf("also: %s", u)
	}
	if r.progress != nil {
		r.con.Clear()
		reports.SummaryBeside(r.progress, rep, out.Unwritten)
	}
}

// endHistory writes the history's end event when the run finished: the
// workload ran its full time and every final read was taken, so the
// history is the whole record, and says so last. A run that gets no
// further than this, whatever stopped it, leaves a history no re-check
// calls valid (docs/history.md). A failure to write it is the recorder's
// error, which the run reports as a history that could not be saved.
func endHistory(rec *history.Recorder, done phasesDone, runErr error, logf func(string, ...any)) {
	if runErr != nil || done.incomplete != "" || done.interrupted {
		return
	}
	if err := rec.End(); err != nil {
		logf("writing the history's end: %v", err)
	}
}
