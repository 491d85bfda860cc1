package reports

import (
	"encoding/json"
	"io"

	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/runstore"
)

// ResultsSchema names the version of results.json (docs/results.md).
const ResultsSchema = "fencecheck/results/v1"

// Results is the shape of results.json, documented field by field in
// docs/results.md. Within one schema version fields are only ever added.
type Results struct {
	// Schema is ResultsSchema.
	Schema string `json:"schema"`
	// Name is the test's name: the store's first level.
	Name string `json:"name"`
	// Verdict is valid, invalid or unknown, as the exit code says.
	Verdict models.Verdict `json:"verdict"`
	// Explanation is the headline: why the run is not valid, naming the
	// failing keys when there are several keys.
	Explanation string `json:"explanation,omitempty"`
	// Keys is the verdict on each key, in natural order of the keys'
	// names (k2 before k10).
	Keys  []models.KeyResult `json:"keys"`
	Stats Stats              `json:"stats"`
	// Damage is how much harm the run did, over the run and per key.
	Damage models.Damage `json:"damage"`
	// Exposures are the moments safety was at stake and how each ended
	// (docs/results.md); absent from runs checked before they were
	// counted.
	Exposures *models.Exposures `json:"exposures,omitempty"`
	// ContradictedGrants counts the acknowledged grants the lock service
	// later contradicted: a token granted twice, a token going down
	// (models.Contradictions, docs/results.md); absent from runs checked
	// before they were counted.
	ContradictedGrants *models.Contradictions `json:"contradicted_grants,omitempty"`
	// PowerCuts are a run under a power fault's cuts: each one's time,
	// nodes, what it dropped and the grants after it that a grant it lost
	// could contradict (models.PowerCuts, docs/results.md); absent from
	// runs under no power fault.
	PowerCuts *models.PowerCuts `json:"power_cuts,omitempty"`
	// Crashes are a run's crashes (kills, failpoints, power cuts): each
	// one's interval and the grants after it (models.Crashes,
	// docs/results.md); absent from runs with none.
	Crashes *models.Crashes `json:"crashes,omitempty"`
	// Params are everything needed to rerun the test, in order.
	Params []Param `json:"params"`
	// Command is the exact command line that reruns it, seed included,
	// each argument quoted as a POSIX shell reads it back.
	Command string `json:"command,omitempty"`
	// CommandArgv is the same command as a list of arguments, for a
	// program that runs it without a shell.
	CommandArgv []string `json:"command_argv,omitempty"`
	// Started is the UTC wall-clock time of the history's time zero.
	Started string `json:"started"`
	// DurationS is the whole run in seconds, setup and check included.
	DurationS float64 `json:"duration_s"`
	// CheckS is the linearizability search in seconds.
	CheckS float64 `json:"check_s"`
	// Events is the number of lines of history.jsonl.
	Events      int    `json:"events"`
	Interrupted bool   `json:"interrupted,omitempty"`
	Error       string `json:"error,omitempty"`

	// Incomplete says what the run did not do that a valid verdict
	// needs (docs/results.md); the verdict is then at best unknown.
	Incomplete string `json:"incomplete,omitempty"`
	// Unfinished, written by `check report`, says why the history is not
	// a finished run's (no end event, a last line cut short, ops still
	// open; docs/history.md); the verdict is then at best unknown. It is
	// found again from the history each time, never read back.
	Unfinished string `json:"unfinished,omitempty"`

	// EndedBy says what ended the workload: time-limit, violation
	// (--stop-on-violation) or exposures (--exposures); omitted when an
	// interrupt or a failure did.
	EndedBy string `json:"ended_by,omitempty"`
	// Servers is what the servers said they are (docs/results.md).
	Servers *Servers `json:"servers,omitempty"`
	// ExpiredGrants counts the lock grants made on an already expired
	// lease (docs/results.md).
	ExpiredGrants *ExpiredGrants `json:"expired_grants,omitempty"`
	// Agreement is what the servers held at the end: whether the members
	// agree and every token counter still holds the highest token
	// acknowledged (models.Agreement, docs/results.md); absent when the
	// servers were not asked.
	Agreement *models.Agreement `json:"agreement,omitempty"`
}

// ExpiredGrants is how often the lock service granted the lock on a lease
// or session that had already expired (etcd's bug 11456, which Jepsen's
// etcd analysis measured), among the grants of the workload. A backend
// whose grants cannot be told apart, or cannot be on an expired lease at
// all, is not counted, and Why says which.
type ExpiredGrants struct {
	Counted bool `json:"counted"`
	// Count of Grants: every acquisition the service granted in the
	// workload, the ones the careful client then refused included.
	Count  int    `json:"count"`
	Grants int    `json:"grants"`
	Why    string `json:"why,omitempty"`
}

// MakeResults builds results.json's content.
func MakeResults(r *Run) Results {
	contradicted := models.CountContradictions(r.Ops, r.Faults)
	return Results{
		ContradictedGrants: &contradicted, PowerCuts: r.Result.PowerCuts, Crashes: r.Result.Crashes,
		Schema: ResultsSchema, Name: r.Name, Verdict: r.Result.Verdict, Explanation: Headline(r.Result),
		Keys: naturalKeys(r.Result.Keys), Stats: ComputeStats(r.Ops), Damage: models.ComputeDamage(r.Ops), Exposures: r.Result.Exposures, Params: r.Params, Command: r.Command, CommandArgv: r.CommandArgv,
		Started: r.Started.UTC().Format(runstore.TimeLayout), DurationS: r.Duration.Seconds(),
		CheckS: r.CheckTime.Seconds(), Events: len(r.Events), Interrupted: r.Interrupted, Error: r.Error,
		Incomplete: r.Incomplete, Unfinished: r.Unfinished, Servers: r.Servers, ExpiredGrants: r.ExpiredGrants, EndedBy: r.EndedBy,
		Agreement: r.Result.Agreement,
	}
}

// WriteResults writes results.json.
func WriteResults(w io.Writer, r *Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(MakeResults(r))
}
