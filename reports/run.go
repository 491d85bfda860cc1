// Package reports turns a finished run — its history, its verdict and its
// parameters — into what people and CI read, and reads a store back to
// regenerate a report or serve the store's index on localhost. Its files
// group by what they produce:
//
//   - the run: Run and WriteAll (run.go); the verdict's headline and the
//     natural order of keys (keys.go); the op statistics (stats.go);
//   - the story of an anomaly, told from the history with the lease
//     beliefs models derives (story.go, teller.go, storysteps.go);
//   - the run page, report.html with its SVG figures (html.go, plots.go,
//     timeline.go, timelinedraw.go, svg.go) and porcupine's visualizations;
//   - the machine-readable outputs: results.json (results.go, load.go),
//     JUnit (junit.go), the GitHub step summary (stepsummary.go) and the
//     terminal summary (summary.go);
//   - the store's server and index (serve.go, index.go).
//
// Reports only read: they never change a verdict, judge a history (that is
// models'), touch a cluster or write outside a run's directory (and the
// files CI names). When an op ended and how seconds are printed are
// history's rules, not theirs.
package reports

import (
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/runstore"
)

// Param is one parameter of a run, in the order the report lists them.
type Param struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Run is everything a report is made from.
type Run struct {
	Dir         string
	Name        string
	Command     string
	CommandArgv []string // Command as a list of arguments
	Started     time.Time
	Duration    time.Duration
	CheckTime   time.Duration
	Params      []Param
	Events      []history.Event
	Ops         []history.Op
	Faults      []history.Fault
	Result      models.Result
	Interrupted bool
	// Incomplete is what the run did not do that a valid verdict needs
	// (the workload cut short, the final reads skipped), if anything.
	Incomplete string
	// Error is why the run did not complete, if it did not.
	Error string
	// Servers is what the lock service's servers said they are; nil when
	// the run never asked (its setup failed) or predates the question.
	Servers *Servers
	// ExpiredGrants counts the grants the lock service made on a lease
	// that had already expired; nil when the run never counted them.
	ExpiredGrants *ExpiredGrants
	// HistoryNote says what reading the history back left out (its last
	// line, cut by a kill), or "".
	HistoryNote string
	// EndedBy says what ended the workload: "time-limit", "violation"
	// (--stop-on-violation) or "exposures" (--exposures); "" when
	// something else did or the run predates it.
	EndedBy string
	// Drops are what each power cut dropped, as its fault reported it
	// (read back from results.json's power_cuts), for the verdict of a
	// run checked again; nil without power cuts.
	Drops []models.Drop
	// Unfinished, on a run read back from its directory (LoadRun), says
	// why its history is not a finished run's (history.History.Unfinished):
	// no end event, a cut last line, ops still open. "" when it is, and
	// on a run just carried out (the harness knows how it went).
	Unfinished string
	// Agreement, on a run read back from its directory (LoadRun), is what
	// its results.json said the servers held at the end, for the check
	// to hold the history to again (models.CheckAgreement); nil when the
	// servers were not asked. A run just carried out has it in Result.
	Agreement *models.Agreement
}

// NotFinished is every reason the run did not finish, joined: what it
// did not do (Incomplete) and why its history is not a finished run's
// (Unfinished); "" when it finished.
func (r *Run) NotFinished() string {
	switch {
	case r.Incomplete == "":
		return r.Unfinished
	case r.Unfinished == "":
		return r.Incomplete
	}
	return r.Incomplete + "; " + r.Unfinished
}

// End is the time of the last thing the run's history knows.
func (r *Run) End() int64 {
	var end int64
	if n := len(r.Events); n > 0 {
		end = r.Events[n-1].Time
	}
	for i := range r.Ops {
		end = max(end, r.Ops[i].Call, r.Ops[i].Done)
	}
	for _, f := range r.Faults {
		end = max(end, f.Start)
		if f.End != math.MaxInt64 {
			end = max(end, f.End)
		}
	}
	return end
}

// WriteAll writes results.json, report.html and linearizability.html (and
// one visualization per key under linearizability/ when there are several
// keys) into the run's directory.
func WriteAll(r *Run) error {
	var errs []error
	if err := runstore.WriteFile(runstore.Run(r.Dir).Results(), func(f *os.File) error { return WriteResults(f, r) }); err != nil {
		errs = append(errs, err)
	}
	if err := runstore.WriteFile(runstore.Run(r.Dir).Report(), func(f *os.File) error { return WriteHTML(f, r) }); err != nil {
		errs = append(errs, err)
	}
	if err := writeVisualizations(r); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// WriteOutputs writes what a run's check produced — the reports in its
// directory (WriteAll), the JUnit file when junit is given, CI's step
// summary when stepSummary is given — and names each that could not be
// written, with why. The run and `check report` both write through here;
// a file that cannot be written never replaces the verdict, it is said
// beside it (SummaryBeside).
func WriteOutputs(r *Run, junit, stepSummary string) []string {
	var unwritten []string
	if err := WriteAll(r); err != nil {
		unwritten = append(unwritten, fmt.Sprintf("the reports in %s were not all written: %v", r.Dir, err))
	}
	if junit != "" {
		if err := WriteJUnitFile(junit, r); err != nil {
			unwritten = append(unwritten, fmt.Sprintf("the JUnit file %s was not written: %v", junit, err))
		}
	}
	if err := WriteStepSummary(stepSummary, r); err != nil {
		unwritten = append(unwritten, fmt.Sprintf("the step summary was not written: %v", err))
	}
	return unwritten
}

// visualizedKey is the key whose porcupine visualization stands as
// linearizability.html: the first invalid key, else the first key (in
// natural order).
func visualizedKey(r *Run) int {
	order := naturalOrder(r.Result.Keys)
	for _, i := range order {
		if k := &r.Result.Keys[i]; k.Verdict == models.Invalid && k.CanVisualize() {
			return i
		}
	}
	for _, i := range order {
		if r.Result.Keys[i].CanVisualize() {
			return i
		}
	}
	return -1
}

func writeVisualizations(r *Run) error {
	i := visualizedKey(r)
	if i < 0 {
		return nil
	}
	var errs []error
	k := &r.Result.Keys[i]
	if err := runstore.WriteFile(runstore.Run(r.Dir).Visualization(), func(f *os.File) error { return k.Visualize(f, r.Faults) }); err != nil {
		errs = append(errs, err)
	}
	if len(r.Result.Keys) > 1 {
		if err := os.MkdirAll(runstore.Run(r.Dir).KeyVisualizations(), 0o755); err != nil {
			return err
		}
		for j := range r.Result.Keys {
			k := &r.Result.Keys[j]
			if !k.CanVisualize() {
				continue
			}
			if err := runstore.WriteFile(runstore.Run(r.Dir).KeyVisualization(safeName(k.Key)), func(f *os.File) error { return k.Visualize(f, r.Faults) }); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// safeName keeps a key usable as a file name.
func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}
