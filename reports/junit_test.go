package reports

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fencecheck/fencecheck/models"
)

type parsedJUnit struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Skipped  int `xml:"skipped,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Props []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Name    string `xml:"name,attr"`
			Failure *struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			} `xml:"failure"`
			Error *struct {
				Message string `xml:"message,attr"`
			} `xml:"error"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func parseJUnit(t *testing.T, r *Run) (parsedJUnit, string) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc parsedJUnit
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("the JUnit XML does not parse: %v\n%s", err, buf.String())
	}
	return doc, buf.String()
}

func TestJUnitOneCasePerKey(t *testing.T) {
	r := synthetic(t, 5000, false)
	r.Result.Keys = append(r.Result.Keys,
		models.KeyResult{Key: "k1", Verdict: models.Unknown, Explanation: "key k1: the search timed out"},
		models.KeyResult{Key: "k2", Verdict: models.Valid})
	doc, _ := parseJUnit(t, r)
	if doc.Tests != 3 || doc.Failures != 1 || doc.Errors != 1 || doc.Skipped != 1 || len(doc.Suites) != 1 {
		t.Fatalf("counts: %+v", doc)
	}
	cs := doc.Suites[0].Cases
	if cs[0].Name != "key k0" || cs[0].Failure == nil || !strings.Contains(cs[0].Failure.Text, "stale") {
		t.Errorf("the invalid key is not a failure with its story: %+v", cs[0])
	}
	if cs[1].Error == nil || !strings.Contains(cs[1].Error.Message, "timed out") {
		t.Errorf("the unknown key is not an error: %+v", cs[1])
	}
	if cs[2].Skipped == nil { // k2 has no ops at all: nothing to check
		t.Errorf("a key with nothing to check is not skipped: %+v", cs[2])
	}
	found := false
	for _, p := range doc.Suites[0].Props {
		if p.Name == "command" && strings.Contains(p.Value, "--seed 1") {
			found = true
		}
	}
	if !found {
		t.Error("the rerun command is not a property")
	}
}

func TestJUnitAndStepSummaryEscapeHostileStrings(t *testing.T) {
	r := hostileRun()
	doc, raw := parseJUnit(t, r)
	if !utf8.ValidString(raw) || strings.Contains(raw, "<script") || strings.Contains(raw, "\x00") {
		t.Errorf("hostile strings leak into the XML:\n%s", raw)
	}
	if len(doc.Suites[0].Cases) != 2 || doc.Suites[0].Cases[1].Name != "run" || doc.Errors != 1 || doc.Failures != 1 {
		t.Errorf("want the invalid key and the incomplete run: %+v", doc)
	}
	if !strings.Contains(doc.Suites[0].Cases[0].Name, "<script>alert(1)</script>") {
		t.Errorf("the key does not survive as text: %q", doc.Suites[0].Cases[0].Name)
	}

	path := filepath.Join(t.TempDir(), "summary.md")
	if err := os.WriteFile(path, []byte("earlier step\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteStepSummary(path, r); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	md := string(b)
	if !strings.HasPrefix(md, "earlier step\n") {
		t.Error("the summary does not append")
	}
	// Outside the fenced code block (where GitHub shows everything as
	// written), nothing is markup.
	prose := md
	if i, j := strings.Index(md, "```sh\n"), strings.LastIndex(md, "\n```"); i >= 0 && j > i {
		prose = md[:i] + md[j:]
	}
	if strings.Contains(prose, "<script") || strings.Contains(prose, "<img") || !utf8.ValidString(md) {
		t.Errorf("hostile strings leak into the Markdown:\n%s", md)
	}
	if !strings.Contains(md, "&lt;script&gt;") || !strings.Contains(md, "INVALID") {
		t.Errorf("the summary lacks the escaped key or the verdict:\n%s", md)
	}
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(line, "| k") && strings.Count(line, "|")-strings.Count(line, `\|`) != 5 {
			t.Errorf("a table row has stray cell separators: %s", line)
		}
	}
	if err := WriteStepSummary("", r); err != nil {
		t.Errorf("an empty path must do nothing: %v", err)
	}
}
