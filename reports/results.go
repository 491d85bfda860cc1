package reports

import (
	"encoding/json"
	"io"

	"github.com/fencecheck/fencecheck/models"
)

// ResultsSchema names the version of results.json (docs/results.md).
const ResultsSchema = "fencecheck/results/v1"

// Results is the shape of results.json.
type Results struct {
	Schema      string             `json:"schema"`
	Name        string             `json:"name"`
	Verdict     models.Verdict     `json:"verdict"`
	Explanation string             `json:"explanation,omitempty"`
	Keys        []models.KeyResult `json:"keys"`
	Stats       Stats              `json:"stats"`
	Params      []Param            `json:"params"`
	Command     string             `json:"command,omitempty"`
	Started     string             `json:"started"`
	DurationS   float64            `json:"duration_s"`
	CheckS      float64            `json:"check_s"`
	Events      int                `json:"events"`
	Interrupted bool               `json:"interrupted,omitempty"`
	Error       string             `json:"error,omitempty"`
}

// MakeResults builds results.json's content.
func MakeResults(r *Run) Results {
	return Results{
		Schema: ResultsSchema, Name: r.Name, Verdict: r.Result.Verdict, Explanation: r.Result.Explanation,
		Keys: r.Result.Keys, Stats: ComputeStats(r.Ops), Params: r.Params, Command: r.Command,
		Started: r.Started.UTC().Format("2006-01-02T15:04:05.000Z"), DurationS: r.Duration.Seconds(),
		CheckS: r.CheckTime.Seconds(), Events: len(r.Events), Interrupted: r.Interrupted, Error: r.Error,
	}
}

// WriteResults writes results.json.
func WriteResults(w io.Writer, r *Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(MakeResults(r))
}
