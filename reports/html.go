package reports

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/runstore"
)

//go:embed report.html.tmpl
var reportTemplate string

var funcs = template.FuncMap{
	"secs":  history.Seconds,
	"upper": strings.ToUpper,
	"verdictClass": func(v models.Verdict) string {
		switch v {
		case models.Valid, models.Invalid:
			return string(v)
		}
		return "unknown"
	},
	"ms": func(v float64) string { return fmt.Sprintf("%.1f", v) },
}

var tmpl = template.Must(template.New("report").Funcs(funcs).Parse(reportTemplate))

// maxFaultRows bounds the table of faults.
const maxFaultRows = 200

type keyView struct {
	Key         string
	ID          string
	Verdict     models.Verdict
	Ops         int
	CheckMillis int64
	Explanation string
	Culprits    []int64
	Story       []Step
	// Vis is the relative link to porcupine's visualization of the key,
	// empty when there is none.
	Vis string
}

type countRow struct {
	F                     string
	OK, Fail, Info, Total int
}

type faultRow struct {
	F, Nodes, Start, End, Length, Error string
}

type reportView struct {
	Name        string
	Verdict     models.Verdict
	Explanation string
	Started     string
	DurationS   float64
	CheckS      float64
	Events      int
	Interrupted bool
	Incomplete  string
	Error       string
	HistoryNote string
	KeysSummary string
	Command     string
	Seed        string
	Params      []Param
	Keys        []keyView
	Invalid     []keyView
	Stats       Stats
	Counts      []countRow
	Faults      []faultRow
	MoreFaults  int
	Timelines   []Drawing
	Latency     Drawing
	Throughput  Drawing
	Legend      []struct{ F, Color string }
	Files       []string
	Colors      map[string]string
	// KeyColors tell the keys' lease bands apart, when there are a few.
	KeyColors []struct{ Key, Color string }
	// MoreInvalid counts the invalid keys whose story is left out.
	MoreInvalid int
	// Exposures says what a valid verdict tested, or that the run tested
	// nothing (Unexercised), or how many of an invalid run's exposures
	// were admitted; ExposureBound is the bound on admission. "" when the
	// run's exposures were not counted.
	Exposures     string
	ExposureBound string
	Unexercised   bool
	// Contradicted says how many acknowledged grants the lock service
	// later contradicted; ContradictionRows are the first of them.
	Contradicted string
	// PowerCuts is a run under a power fault's cuts in one sentence, and
	// PowerCutRows each cut: "" and nil without power cuts.
	PowerCuts         string
	PowerCutRows      []powerCutRow
	ContradictionRows []contradictionRow
	MoreContradicted  int
	// EndedBy says what ended the workload early on purpose, if anything.
	EndedBy string
	// Damage is the run's damage in one line; DamageKeys its keys', when
	// there are several.
	Damage     string
	DamageKeys []damageRow
	// Agreement is what the servers held at the end, in one sentence, and
	// each member's answer; "" and nil when they were not asked.
	Agreement        string
	AgreementInvalid bool
	AgreementMembers []models.MemberState
	AgreementQuery   string
	// Servers is what the servers said they are, cleaned; nil when the
	// run did not ask.
	Servers *Servers
	// ServerImage is the image the servers ran from (--server-image), ""
	// for the node image's build.
	ServerImage string
}

// damageRow is one key's damage in the report.
type damageRow struct {
	Key, Final, Lost, Share, Note         string
	Acknowledged, Unknown, Stale, Refused int
	OverlapS                              float64
}

// contradictionRow is one contradicted grant in the report.
type contradictionRow struct {
	Key, Kind, Acknowledged, Later, Crash string
}

// maxContradictionRows bounds the contradicted grants the report lists.
const maxContradictionRows = 20

// contradictionRows renders the first contradicted grants.
func contradictionRows(x *models.Contradictions) ([]contradictionRow, int) {
	var out []contradictionRow
	for i, c := range x.List {
		if i == maxContradictionRows {
			break
		}
		row := contradictionRow{Key: clean(c.Key), Kind: "granted twice",
			Acknowledged: fmt.Sprintf("token %d to process %d at %s", c.Token, c.Process, history.Seconds(c.Time)),
			Later:        fmt.Sprintf("token %d to process %d at %s", c.LaterToken, c.LaterProcess, history.Seconds(c.LaterTime)),
			Crash:        "—"}
		if c.Kind == models.WentDown {
			row.Kind = "went down"
		}
		if c.Crash != "" {
			row.Crash = clean(fmt.Sprintf("%s at %s", c.Crash, history.Seconds(c.CrashTime)))
			if c.CrashesBetween > 1 {
				row.Crash += fmt.Sprintf(" (and %d more)", c.CrashesBetween-1)
			}
		} else if c.Failover != "" {
			row.Crash = clean(fmt.Sprintf("no crash: the %s at %s", c.Failover, history.Seconds(c.FailoverTime)))
		}
		out = append(out, row)
	}
	return out, x.GrantedTwice + x.WentDown - len(out)
}

// damageRows renders the damage of each key.
func damageRows(d *models.Damage) []damageRow {
	var out []damageRow
	for i := range d.Keys {
		k := &d.Keys[i]
		row := damageRow{Key: clean(k.Key), Final: "—", Lost: "—", Share: "—", Note: clean(k.Note),
			Acknowledged: k.Acknowledged, Unknown: k.UnknownWrites, Stale: k.StaleWritesAccepted, Refused: k.StaleRefused, OverlapS: k.OverlapS}
		if k.FinalValue != nil {
			row.Final = fmt.Sprint(*k.FinalValue)
		} else {
			row.Final = string(k.Final)
		}
		if k.LostMin != nil {
			row.Lost = fmt.Sprint(*k.LostMin)
			if *k.LostMax != *k.LostMin {
				row.Lost = fmt.Sprintf("%d–%d", *k.LostMin, *k.LostMax)
			}
		}
		if lo, hi, ok := k.LostShare(); ok {
			row.Share = models.ShareText(lo, hi)
		}
		out = append(out, row)
	}
	return out
}

// maxStories bounds the stories told in one report.
const maxStories = 10

// visLink is where WriteAll puts porcupine's visualization of key i.
func visLink(r *Run, i int) string {
	k := &r.Result.Keys[i]
	if !k.CanVisualize() {
		return ""
	}
	if len(r.Result.Keys) > 1 {
		return runstore.VisualizationDir + "/" + safeName(k.Key) + ".html"
	}
	return runstore.VisualizationFile
}

// WriteHTML writes the self-contained report.html: no script, style or
// font is fetched from anywhere, the figures are inline SVG, and
// everything that came from a client, a server or a file is made valid
// UTF-8 and escaped.
func WriteHTML(w io.Writer, r *Run) error {
	res := MakeResults(r)
	v := reportView{
		Name: clean(r.Name), Verdict: r.Result.Verdict, Explanation: clean(res.Explanation),
		Started: res.Started, DurationS: res.DurationS, CheckS: res.CheckS, Events: res.Events,
		Interrupted: r.Interrupted, Incomplete: clean(r.NotFinished()), Error: clean(r.Error), HistoryNote: clean(r.HistoryNote), Command: clean(r.Command), Stats: res.Stats,
		Timelines: Timelines(r), Latency: Latency(r), Throughput: Throughput(r), Legend: legendFs(r.Ops),
		Colors: map[string]string{"ok": colorOK, "fail": colorFail, "info": colorInfo, "fault": colorFault,
			"overlap": colorOverlap, "belief": colorBelief, "culprit": colorCulprit},
	}
	v.Damage = clean(res.Damage.Text())
	v.EndedBy = capitalize(EndedByText(r.EndedBy))
	if x := r.Result.Exposures; x != nil {
		sr := StoredRun{Verdict: r.Result.Verdict, Exposures: x, Explanation: r.Result.Explanation}
		v.Unexercised = sr.Unexercised()
		v.Exposures = clean(sr.ExposureText())
		if r.Result.Verdict == models.Invalid {
			v.Exposures = clean(capitalize(x.Text()) + ".")
		}
		v.ExposureBound = clean(x.BoundText())
	}
	if x := res.ContradictedGrants; x != nil {
		v.Contradicted = clean(capitalize(x.Text()) + ".")
		if ex := r.Result.Exposures; ex != nil && ex.RefusedWentBack > 0 {
			v.Contradicted = clean(capitalize(x.Text()) + "; " + ex.WentBackText() + ".")
		}
		v.ContradictionRows, v.MoreContradicted = contradictionRows(x)
	}
	if a := r.Result.Agreement; a != nil {
		v.Agreement, v.AgreementInvalid, v.AgreementQuery = clean(capitalize(a.Short())+"."), a.Verdict == models.Invalid, clean(a.Query)
		for _, m := range a.Members {
			v.AgreementMembers = append(v.AgreementMembers, models.MemberState{Node: clean(m.Node), State: clean(m.State), Detail: clean(m.Detail), Error: clean(m.Error)})
		}
	}
	if p := res.PowerCuts; p != nil {
		v.PowerCuts = clean(capitalize(p.Text()) + ".")
		v.PowerCutRows = powerCutRows(p)
	}
	if sv := r.Servers; sv != nil {
		c := &Servers{Summary: clean(sv.Summary), Query: clean(sv.Query)}
		for _, n := range sv.Nodes {
			c.Nodes = append(c.Nodes, ServerNode{Node: clean(n.Node), Version: clean(n.Version), Answer: clean(n.Answer), Error: clean(n.Error)})
		}
		v.Servers = c
	}
	if len(res.Damage.Keys) > 1 {
		v.DamageKeys = damageRows(&res.Damage)
	}
	for i := range v.Timelines {
		v.Timelines[i].Title, v.Timelines[i].Caption = clean(v.Timelines[i].Title), clean(v.Timelines[i].Caption)
	}
	if v.Explanation == "" && r.Result.Verdict == models.Valid {
		v.Explanation = "Every key's history is consistent with correctly fenced storage."
		if n := res.Stats.Overlaps; n > 0 {
			v.Explanation += fmt.Sprintf(" Mutual exclusion was broken %d %s (two processes believed they held the same lease at once), and the storage refused %d %s with a stale token.",
				n, plural(n, "time", "times"), res.Stats.Fenced, plural(res.Stats.Fenced, "op", "ops"))
		}
	}
	for _, p := range r.Params {
		v.Params = append(v.Params, Param{clean(p.Name), clean(p.Value)})
		if p.Name == "seed" {
			v.Seed = clean(p.Value)
		}
		if p.Name == "server-image" && p.Value != "" {
			v.ServerImage = clean(p.Value)
		}
	}
	v.Keys, v.Invalid, v.MoreInvalid = keyViews(r)
	if len(r.Result.Keys) > maxListedKeys {
		v.KeysSummary = keysSummary(r.Result.Keys)
	}
	for _, f := range sortedFs(r.Ops) {
		m := res.Stats.Ops[f]
		v.Counts = append(v.Counts, countRow{clean(f), m["ok"], m["fail"], m["info"], m["ok"] + m["fail"] + m["info"]})
	}
	v.Faults, v.MoreFaults = faultRows(r.Faults)
	if keys := sortedKeys(r.Ops); len(keys) > 1 && len(keys) <= len(keyColors) {
		for i, k := range keys {
			v.KeyColors = append(v.KeyColors, struct{ Key, Color string }{clean(k), keyColors[i]})
		}
	}
	v.Files = []string{runstore.HistoryFile, runstore.ResultsFile, runstore.LogFile}
	if visualizedKey(r) >= 0 {
		v.Files = append(v.Files, runstore.VisualizationFile)
	}
	return tmpl.Execute(w, v)
}

// keyViews are the rows of the keys table and the stories of the invalid
// keys: at most maxStories of them get a story, more counts the rest.
func keyViews(r *Run) (keys, invalid []keyView, more int) {
	// The table lists failing keys first, each group in natural order, so
	// that with a thousand keys the invalid one is the first row.
	for _, i := range failingFirst(r.Result.Keys) {
		k := &r.Result.Keys[i]
		kv := keyView{Key: clean(k.Key), ID: "story-" + safeName(k.Key), Verdict: k.Verdict, Ops: k.Ops, CheckMillis: k.CheckMillis,
			Explanation: clean(k.Explanation), Culprits: k.Culprits, Vis: visLink(r, i)}
		if k.Verdict == models.Invalid && len(invalid) < maxStories {
			for _, s := range Story(r, k) {
				s.Text = clean(s.Text)
				kv.Story = append(kv.Story, s)
			}
		}
		keys = append(keys, kv)
		if k.Verdict == models.Invalid {
			if len(invalid) == maxStories {
				more++
				continue
			}
			invalid = append(invalid, kv)
		}
	}
	return keys, invalid, more
}

// faultRows are the rows of the faults table: at most maxFaultRows, more
// counts the faults left out.
func faultRows(faults []history.Fault) (rows []faultRow, more int) {
	for i, f := range faults {
		if i == maxFaultRows {
			more = len(faults) - i
			break
		}
		row := faultRow{F: clean(f.F), Nodes: clean(strings.Join(f.Nodes, ", ")), Start: history.Seconds(f.Start), Error: clean(f.Error)}
		switch {
		case f.End == math.MaxInt64:
			row.End, row.Length = "never healed", "—"
		default:
			row.End, row.Length = history.Seconds(f.End), history.Seconds(f.End-f.Start)
		}
		rows = append(rows, row)
	}
	return rows, more
}

// sortedKeys lists the keys of the ops in natural order, as the timeline
// colours them.
func sortedKeys(ops []history.Op) []string {
	seen := map[string]bool{}
	var keys []string
	for i := range ops {
		if !seen[ops[i].Key] {
			seen[ops[i].Key] = true
			keys = append(keys, ops[i].Key)
		}
	}
	sortNatural(keys)
	return keys
}

// keysSummary sums a table of many keys up in one line: how many are
// valid (and their sizes), and which are not.
func keysSummary(keys []models.KeyResult) string {
	var valid []models.KeyResult
	var invalid, unknown []string
	for _, i := range failingFirst(keys) {
		switch k := keys[i]; k.Verdict {
		case models.Valid:
			valid = append(valid, k)
		case models.Invalid:
			invalid = append(invalid, k.Key)
		default:
			unknown = append(unknown, k.Key)
		}
	}
	s := fmt.Sprintf("%d %s: %d valid", len(keys), plural(len(keys), "key", "keys"), len(valid))
	if len(valid) > 0 {
		s += " (" + opsRange(valid) + ")"
	}
	if len(invalid) > 0 {
		s += fmt.Sprintf(", %d invalid (%s)", len(invalid), fewNames(invalid))
	}
	if len(unknown) > 0 {
		s += fmt.Sprintf(", %d unknown (%s)", len(unknown), fewNames(unknown))
	}
	return s + "; the failing keys come first in the table."
}

// fewNames lists up to five names and counts the rest.
func fewNames(names []string) string {
	if len(names) <= 5 {
		return andList(names)
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:5], ", "), len(names)-5)
}
