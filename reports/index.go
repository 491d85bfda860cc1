package reports

import (
	_ "embed"
	"html/template"
	"io"
	"io/fs"
	"net/url"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/models"
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
	// Problem says why results.json could not be read, if it could not.
	Problem string
	// Files lists the run's files the index links to, in a fixed order.
	Files []string
}

// indexFiles are the files of a run the index links, in order.
var indexFiles = []string{"report.html", "results.json", "history.jsonl", "linearizability.html", "check.log"}

// ListRuns finds every run in a store — store/<test>/<stamp>/ with a
// history.jsonl or a results.json — newest first. It reads each
// results.json for the verdict. Symbolic links (store/latest) are not
// followed, so no run is listed twice and nothing outside is read.
func ListRuns(store fs.FS) ([]StoredRun, error) {
	tests, err := fs.ReadDir(store, ".")
	if err != nil {
		return nil, err
	}
	var out []StoredRun
	for _, t := range tests {
		if !t.IsDir() || t.Type()&fs.ModeSymlink != 0 {
			continue
		}
		stamps, err := fs.ReadDir(store, t.Name())
		if err != nil {
			continue
		}
		for _, s := range stamps {
			if !s.IsDir() || s.Type()&fs.ModeSymlink != 0 {
				continue
			}
			out = append(out, readStoredRun(store, t.Name(), s.Name()))
		}
	}
	var kept []StoredRun
	for _, r := range out {
		if len(r.Files) > 0 {
			kept = append(kept, r)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool {
		if !kept[i].Started.Equal(kept[j].Started) {
			return kept[i].Started.After(kept[j].Started)
		}
		return kept[i].Path > kept[j].Path
	})
	return kept, nil
}

func readStoredRun(store fs.FS, test, stamp string) StoredRun {
	dir := path.Join(test, stamp)
	r := StoredRun{Test: test, Stamp: stamp, Path: dir}
	for _, f := range indexFiles {
		if st, err := fs.Stat(store, path.Join(dir, f)); err == nil && st.Mode().IsRegular() {
			r.Files = append(r.Files, f)
		}
	}
	if t, err := time.Parse(stampLayout, strings.SplitN(stamp, "-", 2)[0]); err == nil {
		r.Started = t
	}
	b, err := fs.ReadFile(store, path.Join(dir, "results.json"))
	if err != nil {
		if len(r.Files) > 0 {
			r.Problem = "no results.json: the run is still going, or it stopped before writing its results"
		}
		return r
	}
	res, err := parseResults(b)
	if err != nil {
		r.Problem = err.Error()
		return r
	}
	r.Verdict, r.Explanation, r.DurationS, r.Events = res.Verdict, res.Explanation, res.DurationS, res.Events
	r.Command, r.Interrupted, r.Error = res.Command, res.Interrupted, res.Error
	if t, err := time.Parse(startedLayout, res.Started); err == nil {
		r.Started = t
	}
	return r
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
