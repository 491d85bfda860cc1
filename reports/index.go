package reports

import (
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/models/verdict"
	"github.com/fencecheck/fencecheck/runstore"
)

//go:embed index.html.tmpl
var indexTemplate string

var indexTmpl = template.Must(template.New("index").Funcs(funcs).Parse(indexTemplate))

// StoredRun is one run directory of a store, as the index lists it.
type StoredRun struct {
	// Test is the test's name (the store's first level), Stamp the run's
	// directory (the second); Path is Test/Stamp.
	Test, Stamp, Path string
	Started           time.Time
	// Verdict is empty when the run has no readable results.json (it is
	// still running, or it crashed).
	Verdict     models.Verdict
	Explanation string
	DurationS   float64
	Events      int
	Command     string
	Interrupted bool
	Error       string
	// Exposures are what results.json says of them; nil for a run
	// checked before they were counted.
	Exposures *models.Exposures
	// Problem says why results.json could not be read, if it could not.
	Problem string
	// Files lists the run's files the index links to, in a fixed order.
	Files []string
}

// ListRuns finds every run in a store (runstore.List: <test>/<stamp>/ with
// one of a run's files), newest first. It reads each results.json for the
// verdict and the start, and lists as unknown a run whose results.json
// says valid but whose history does not end with the end event (a run
// killed, then reported by a fencecheck that did not know better). Symbolic links (store/latest) are not followed,
// so no run is listed twice and nothing outside is read.
func ListRuns(root fs.FS) ([]StoredRun, error) {
	dirs, err := runstore.List(root)
	if err != nil {
		return nil, err
	}
	var out []StoredRun
	for _, d := range dirs {
		out = append(out, readStoredRun(root, d))
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Started.Equal(out[j].Started) {
			return out[i].Started.After(out[j].Started)
		}
		return out[i].Path > out[j].Path
	})
	return out, nil
}

func readStoredRun(root fs.FS, d runstore.RunDir) StoredRun {
	r := StoredRun{Test: d.Test, Stamp: d.Stamp, Path: d.Path, Started: d.Started, Files: d.Files}
	b, err := fs.ReadFile(root, d.Results())
	if err != nil {
		r.Problem = "no results.json: the run is still going, or it stopped before writing its results"
		return r
	}
	res, err := parseResults(b)
	if err != nil {
		r.Problem = "results.json: " + err.Error()
		return r
	}
	r.Verdict, r.Explanation, r.DurationS, r.Events = res.Verdict, res.Explanation, res.DurationS, res.Events
	r.Command, r.Interrupted, r.Error, r.Exposures = res.Command, res.Interrupted, res.Error, res.Exposures
	if t, err := time.Parse(runstore.TimeLayout, res.Started); err == nil {
		r.Started = t
	}
	if r.Verdict == models.Valid {
		// Only a valid verdict can change (verdict.Settle): the last line
		// of its history is read for the end event that shows the run
		// finished.
		if why := unfinishedTail(root, d); why != "" {
			res := verdict.Settle(verdict.Run{Check: models.Result{Verdict: r.Verdict, Explanation: r.Explanation},
				Unfinished: "results.json says valid, but " + why})
			r.Verdict, r.Explanation = res.Verdict, res.Explanation
		}
	}
	return r
}

// unfinishedTail says why the run d cannot be the finished run a
// valid verdict needs, reading only the last line of its history (a page
// of many runs cannot read every history whole): the history is missing,
// or does not end with the end event a finished run writes last. ""
// when it does.
func unfinishedTail(root fs.FS, d runstore.RunDir) string {
	ended, err := history.Ended(root, d.History())
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "it has no history.jsonl to show that it finished"
	case err != nil:
		return fmt.Sprintf("its history.jsonl cannot be read (%v)", err)
	case !ended:
		return "its history.jsonl does not end with the end event (the run was killed, crashed or interrupted, or a fencecheck older than the end event recorded it)"
	}
	return ""
}

// Unexercised reports a valid run that put safety at stake nowhere.
func (r StoredRun) Unexercised() bool {
	return r.Verdict == models.Valid && r.Exposures != nil && !r.Exposures.Exercised()
}

// ExposureText is what the index says of a run's exposures: what its
// valid verdict tested (or that it tested nothing), how many of an
// invalid run's exposures were admitted, the count of an unknown one.
func (r StoredRun) ExposureText() string {
	x := r.Exposures
	switch {
	case x == nil:
		return ""
	case r.Unexercised():
		return "Not exercised: " + NotExercisedText(x) + "."
	case r.Verdict == models.Valid:
		return capitalize(x.Text()) + "."
	case r.Verdict == models.Invalid:
		return capitalize(strings.TrimSuffix(strings.TrimPrefix(AdmittedText(x), " ("), ")")) + "."
	case strings.Contains(r.Explanation, "exposure"):
		return "" // the explanation says it already
	}
	return "Exposures so far: " + x.Short() + "."
}

type indexRow struct {
	StoredRun
	Link      string
	FileLinks []struct{ Name, Href string }
}

type indexView struct {
	Store  string
	Rows   []indexRow
	Counts map[string]int
	Now    string
}

// runLink is the URL path of a file of a run, each segment escaped.
func runLink(dir, file string) string {
	var parts []string
	for _, p := range strings.Split(dir, "/") {
		parts = append(parts, url.PathEscape(p))
	}
	u := "/" + strings.Join(parts, "/") + "/"
	if file != "" {
		u += url.PathEscape(file)
	}
	return u
}

// WriteIndex writes the store's index page: every run with its verdict,
// newest first, each linking to its report and its files.
func WriteIndex(w io.Writer, store string, runs []StoredRun) error {
	v := indexView{Store: clean(store), Counts: map[string]int{}, Now: time.Now().UTC().Format("2006-01-02 15:04:05Z")}
	for _, r := range runs {
		row := indexRow{StoredRun: r, Link: runLink(r.Path, "")}
		row.Test, row.Stamp, row.Path = clean(r.Test), clean(r.Stamp), clean(r.Path)
		row.Explanation, row.Command, row.Error, row.Problem = clean(r.Explanation), clean(r.Command), clean(r.Error), clean(r.Problem)
		for _, f := range r.Files {
			row.FileLinks = append(row.FileLinks, struct{ Name, Href string }{f, runLink(r.Path, f)})
		}
		v.Rows = append(v.Rows, row)
		switch r.Verdict {
		case models.Valid, models.Invalid, models.Unknown:
			v.Counts[string(r.Verdict)]++
		default:
			v.Counts["incomplete"]++
		}
	}
	return indexTmpl.Execute(w, v)
}
