package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
	"github.com/fencecheck/fencecheck/runstore"
)

// JUnit XML, as CI systems read it (the Ant/Surefire dialect GitHub,
// GitLab and Jenkins accept).
type junitSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	junitTotals
	Suites []junitSuite `xml:"testsuite"`
}

// junitTotals are the attributes <testsuites> and <testsuite> both carry:
// the document's are its one suite's, under the name fencecheck.
type junitTotals struct {
	Name     string `xml:"name,attr"`
	Tests    int    `xml:"tests,attr"`
	Failures int    `xml:"failures,attr"`
	Errors   int    `xml:"errors,attr"`
	Skipped  int    `xml:"skipped,attr"`
	Time     string `xml:"time,attr"`
}

type junitSuite struct {
	junitTotals
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitOutcome `xml:"failure,omitempty"`
	Error     *junitOutcome `xml:"error,omitempty"`
	Skipped   *junitOutcome `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitOutcome struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the run as JUnit XML: one test suite named after the
// test, one test case per key. An invalid key is a <failure> whose text
// is the anomaly's story; an unknown key is an <error> (the check did
// not finish), or <skipped> when no read or write of it reached the
// storage (nothing to check). A run that did not complete, or did not
// finish its workload or its final reads, adds a test case "run" with an
// <error>: whatever its keys say, it does not pass. The suite's properties are the run's
// parameters, its rerun command, the servers' answers and the damage; each case's system-out says how to
// rerun it and where the report is.
func WriteJUnit(w io.Writer, r *Run) error {
	suite := junitSuite{junitTotals: junitTotals{
		Name: clean(r.Name), Time: fmt.Sprintf("%.3f", r.Duration.Seconds()),
	}}
	if !r.Started.IsZero() {
		suite.Timestamp = r.Started.UTC().Format("2006-01-02T15:04:05")
	}
	for _, p := range r.Params {
		suite.Properties = append(suite.Properties, junitProperty{clean(p.Name), clean(p.Value)})
	}
	if r.Command != "" {
		suite.Properties = append(suite.Properties, junitProperty{"command", clean(r.Command)})
	}
	suite.Properties = append(suite.Properties, r.Servers.junitProperties()...)
	suite.Properties = append(suite.Properties, damageProperties(models.ComputeDamage(r.Ops))...)
	suite.Properties = append(suite.Properties, exposureProperties(r.Result)...)
	suite.Properties = append(suite.Properties, contradictionProperties(models.CountContradictions(r.Ops, r.Faults))...)
	suite.Properties = append(suite.Properties, powerCutProperties(r.Result.PowerCuts)...)
	where := rerunText(r)
	class := "fencecheck." + clean(r.Name)
	storage := storageOpsByKey(r.Ops)
	for _, i := range naturalOrder(r.Result.Keys) {
		k := &r.Result.Keys[i]
		c := junitCase{Name: "key " + clean(k.Key), Classname: class, Time: fmt.Sprintf("%.3f", float64(k.CheckMillis)/1000), SystemOut: where}
		switch k.Verdict {
		case models.Valid:
			if storage[k.Key] == 0 {
				c.Skipped = &junitOutcome{Message: "nothing to check: no read or write of this key reached the storage"}
				suite.Skipped++
			}
		case models.Invalid:
			var text strings.Builder
			for _, s := range Story(r, k) {
				fmt.Fprintf(&text, "%s  %s\n", history.Seconds(s.Time), s.Text)
			}
			c.Failure = &junitOutcome{Message: clean(k.Explanation), Type: "invalid", Text: clean(text.String())}
			suite.Failures++
		default:
			msg := k.Explanation
			if msg == "" {
				msg = "the check did not reach a verdict"
			}
			c.Error = &junitOutcome{Message: clean(msg), Type: "unknown"}
			suite.Errors++
		}
		suite.Cases = append(suite.Cases, c)
	}
	if a := r.Result.Agreement; a != nil {
		// The servers' state at the end is a test of its own: members that
		// diverged or a counter that went back fail it, whatever the keys say.
		c := junitCase{Name: "agreement", Classname: class, Time: "0.000", SystemOut: where}
		switch a.Verdict {
		case models.Invalid:
			c.Failure = &junitOutcome{Message: clean(a.Explanation), Type: "invalid"}
			suite.Failures++
		case models.Unknown:
			c.Skipped = &junitOutcome{Message: clean(a.Explanation)}
			suite.Skipped++
		}
		suite.Cases = append(suite.Cases, c)
		suite.Properties = append(suite.Properties, junitProperty{"agreement", clean(a.Short())})
	}
	if c, ok := exposureCase(r.Result, class, where); ok {
		if c.Skipped != nil {
			suite.Skipped++
		}
		suite.Cases = append(suite.Cases, c)
	}
	keysPass := true
	for _, k := range r.Result.Keys {
		keysPass = keysPass && k.Verdict == models.Valid
	}
	if r.Error != "" || r.NotFinished() != "" || len(r.Result.Keys) == 0 || (r.Result.Verdict == models.Unknown && keysPass) {
		msg := r.Error
		if msg == "" && r.NotFinished() != "" && r.Result.Verdict == models.Invalid {
			msg = "the run did not finish: " + r.NotFinished()
		}
		if msg == "" {
			msg = r.Result.Explanation
		}
		if msg == "" {
			msg = "no key was checked"
		}
		suite.Cases = append(suite.Cases, junitCase{Name: "run", Classname: class, Time: suite.Time, SystemOut: where,
			Error: &junitOutcome{Message: clean(msg), Type: "incomplete"}})
		suite.Errors++
	}
	suite.Tests = len(suite.Cases)
	totals := suite.junitTotals
	totals.Name = "fencecheck"
	doc := junitSuites{junitTotals: totals, Suites: []junitSuite{suite}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteJUnitFile writes WriteJUnit's XML to path, creating its directory.
func WriteJUnitFile(path string, r *Run) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	return runstore.WriteFile(path, func(f *os.File) error { return WriteJUnit(f, r) })
}

// rerunText tells CI how to rerun and where to look.
func rerunText(r *Run) string {
	var b strings.Builder
	if r.Command != "" {
		fmt.Fprintf(&b, "rerun: %s\n", clean(r.Command))
	}
	if r.Dir != "" {
		fmt.Fprintf(&b, "report: %s\n", clean(runstore.Run(r.Dir).Report()))
	}
	return b.String()
}

// storageOpsByKey counts, per key, the reads and writes the model checks.
func storageOpsByKey(ops []history.Op) map[string]int {
	out := map[string]int{}
	for i := range ops {
		o := &ops[i]
		if o.F != history.Acquire && models.Relevant(o) {
			out[o.Key]++
		}
	}
	return out
}

// exposureProperties are the run's exposures as suite properties: the
// sentence its verdict says, each count, and the bound on admission.
func exposureProperties(res models.Result) []junitProperty {
	x := res.Exposures
	if x == nil {
		return nil
	}
	text := x.Text()
	if !x.Exercised() {
		text = "not exercised: " + NotExercisedText(x)
	}
	ps := []junitProperty{
		{"exposures", clean(text)},
		{"exposures.count", fmt.Sprint(x.Exposures)},
		{"exposures.admitted", fmt.Sprint(x.Admitted)},
		{"exposures.refused", fmt.Sprint(x.Refused)},
		{"exposures.not_sent", fmt.Sprint(x.NotSent)},
		{"exposures.unknown", fmt.Sprint(x.Unknown)},
		{"exposures.refused_went_back", fmt.Sprint(x.RefusedWentBack)},
	}
	if b := x.BoundText(); b != "" {
		ps = append(ps, junitProperty{"exposures.bound", clean(b)})
	}
	return ps
}

// contradictionProperties are the run's contradicted grants as suite
// properties: the sentence and each count.
func contradictionProperties(x models.Contradictions) []junitProperty {
	return []junitProperty{
		{"contradicted_grants", clean(x.Text())},
		{"contradicted_grants.count", fmt.Sprint(x.Contradicted)},
		{"contradicted_grants.granted_twice", fmt.Sprint(x.GrantedTwice)},
		{"contradicted_grants.went_down", fmt.Sprint(x.WentDown)},
		{"contradicted_grants.after_crash", fmt.Sprint(x.AfterCrash)},
		{"contradicted_grants.after_failover", fmt.Sprint(x.AfterFailover)},
	}
}

// exposureCase is the test case "exposures" of a run whose keys were all
// valid: it passes with the exposures in its output when the run put
// safety at stake, and is skipped, saying so, when it did not (a run held
// to --min-exposures fails as a whole in the case "run" instead).
func exposureCase(res models.Result, class, where string) (junitCase, bool) {
	x := res.Exposures
	if x == nil || res.Verdict != models.Valid {
		return junitCase{}, false
	}
	c := junitCase{Name: "exposures", Classname: class, Time: "0.000"}
	if !x.Exercised() {
		c.Skipped = &junitOutcome{Message: clean("not exercised: " + NotExercisedText(x))}
		c.SystemOut = where
		return c, true
	}
	out := x.Text() + "\n"
	if b := x.BoundText(); b != "" {
		out += b + "\n"
	}
	c.SystemOut = clean(out) + where
	return c, true
}

// damageProperties are the run's damage figures as suite properties: the
// sentence, then each number (lost updates and their share are absent
// when they cannot be told).
func damageProperties(d models.Damage) []junitProperty {
	ps := []junitProperty{
		{"damage", clean(d.Text())},
		{"damage.acknowledged", fmt.Sprint(d.Acknowledged)},
		{"damage.unknown_writes", fmt.Sprint(d.UnknownWrites)},
	}
	if d.LostMin != nil {
		ps = append(ps, junitProperty{"damage.lost_min", fmt.Sprint(*d.LostMin)}, junitProperty{"damage.lost_max", fmt.Sprint(*d.LostMax)})
	}
	if d.LostShareMin != nil {
		ps = append(ps, junitProperty{"damage.lost_share_min", fmt.Sprintf("%.4f", *d.LostShareMin)}, junitProperty{"damage.lost_share_max", fmt.Sprintf("%.4f", *d.LostShareMax)})
	}
	return append(ps,
		junitProperty{"damage.stale_writes_accepted", fmt.Sprint(d.StaleWritesAccepted)},
		junitProperty{"damage.stale_refused", fmt.Sprint(d.StaleRefused)},
		junitProperty{"damage.overlap_s", fmt.Sprintf("%.3f", d.OverlapS)})
}
