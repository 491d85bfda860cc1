package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/fencecheck/fencecheck/models"
)

//go:embed report.html.tmpl
var reportTemplate string

var tmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"secs":  func(t int64) string { return fmt.Sprintf("%.3f s", float64(t)/1e9) },
	"upper": strings.ToUpper,
}).Parse(reportTemplate))

type keyView struct {
	models.KeyResult
	Story []Step
}

type reportView struct {
	*Run
	Results  Results
	Keys     []keyView
	Timeline template.HTML
}

// WriteHTML writes the self-contained report.html: no script or style is
// fetched from anywhere, and everything that came from a client or a
// server is escaped by html/template.
func WriteHTML(w io.Writer, r *Run) error {
	v := reportView{Run: r, Results: MakeResults(r)}
	for i := range r.Result.Keys {
		k := &r.Result.Keys[i]
		v.Keys = append(v.Keys, keyView{KeyResult: *k, Story: Story(r, k)})
	}
	v.Timeline = Timeline(r)
	return tmpl.Execute(w, v)
}
