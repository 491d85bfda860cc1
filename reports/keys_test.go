package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/models"
)

func TestNaturalLess(t *testing.T) {
	in := []string{"k10", "k2", "k100", "k1", "k0", "k11", "k9x", "k10a", "a", "k01", "", "b2", "b10", "k"}
	want := []string{"", "a", "b2", "b10", "k", "k0", "k01", "k1", "k2", "k9x", "k10", "k10a", "k11", "k100"}
	got := append([]string(nil), in...)
	sortNatural(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("natural order\n got %q\nwant %q", got, want)
	}
	for _, a := range want {
		if naturalLess(a, a) {
			t.Errorf("naturalLess(%q, %q) is true", a, a)
		}
	}
	// A strict weak order: exactly one of a<b, b<a for distinct strings.
	for _, a := range want {
		for _, b := range want {
			if a != b && naturalLess(a, b) == naturalLess(b, a) {
				t.Errorf("naturalLess(%q, %q) and naturalLess(%q, %q) agree", a, b, b, a)
			}
		}
	}
}

// manyKeys is a run of n keys as the checker returns them (sorted as
// text), every key valid with 12 to 40 ops, but for the invalid ones and
// the unknown ones given.
func manyKeys(n int, invalid, unknown []int) *Run {
	var keys []models.KeyResult
	for i := 0; i < n; i++ {
		keys = append(keys, models.KeyResult{Key: fmt.Sprintf("k%d", i), Verdict: models.Valid, Ops: 12 + i%29, CheckMillis: 1})
	}
	var first string
	for _, i := range invalid {
		keys[i].Verdict = models.Invalid
		keys[i].Explanation = fmt.Sprintf("process %d wrote 7 with token 3 after token 9 was admitted: a stale lease holder's write was accepted", i)
	}
	for _, i := range unknown {
		keys[i].Verdict = models.Unknown
		keys[i].Explanation = fmt.Sprintf("key k%d: the search timed out after 1s with 40 ops", i)
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a].Key < keys[b].Key })
	res := models.Result{Verdict: models.Valid, Keys: keys}
	// The run's sentence is its first violation's (models.verdictOf): here
	// the invalid key first in natural order.
	for _, i := range naturalOrder(keys) {
		if k := keys[i]; k.Verdict == models.Invalid && first == "" {
			first = k.Explanation
		}
	}
	switch {
	case len(invalid) > 0:
		res.Verdict, res.Explanation = models.Invalid, first
		if len(invalid) > 1 {
			res.Explanation += fmt.Sprintf(" (and %d more keys invalid)", len(invalid)-1)
		}
	case len(unknown) > 0:
		res.Verdict = models.Unknown
		for _, k := range keys {
			if k.Verdict == models.Unknown {
				res.Explanation = k.Explanation
				break
			}
		}
	}
	return &Run{Name: "memory-lease-fenced-none-pause", Dir: "store/x", Result: res,
		Params: []Param{{"keys", fmt.Sprint(n)}, {"seed", "1"}}}
}

// With a thousand keys and one invalid, the terminal names the key in
// the verdict, lists it first and sums the other 999 up in one line.
func TestSummaryOfAThousandKeys(t *testing.T) {
	r := manyKeys(1000, []int{487}, nil)
	var buf bytes.Buffer
	Summary(&buf, r)
	out := buf.String()
	t.Log("\n" + out)
	if n := strings.Count(out, "\n"); n > 20 {
		t.Errorf("the summary has %d lines, want a screenful", n)
	}
	if !strings.Contains(out, "INVALID: key k487 invalid: process 487 wrote 7") {
		t.Errorf("the verdict does not name key k487:\n%s", out)
	}
	keyLines := regexp.MustCompile(`(?m)^  key (\S+) +(\S+)`).FindAllStringSubmatch(out, -1)
	if len(keyLines) != 1 || keyLines[0][1] != "k487" || keyLines[0][2] != "invalid" {
		t.Errorf("key lines %q, want only k487 invalid", keyLines)
	}
	if !strings.Contains(out, "  999 keys valid (12–40 ops placed each)\n") {
		t.Errorf("no summary line for the valid keys:\n%s", out)
	}
}

// A few failing keys among many: invalid ones first, then unknown, each
// in natural order; the headline names the first and the others.
func TestSummaryListsFailingKeysFirst(t *testing.T) {
	r := manyKeys(200, []int{100, 20, 3, 150, 7, 9, 11, 13}, []int{2, 30})
	var buf bytes.Buffer
	Summary(&buf, r)
	out := buf.String()
	var got []string
	for _, m := range regexp.MustCompile(`(?m)^  key (\S+) +(\S+)`).FindAllStringSubmatch(out, -1) {
		got = append(got, m[1]+" "+m[2])
	}
	want := []string{"k3 invalid", "k7 invalid", "k9 invalid", "k11 invalid", "k13 invalid", "k20 invalid", "k100 invalid", "k150 invalid", "k2 unknown", "k30 unknown"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("key lines\n got %q\nwant %q", got, want)
	}
	if !strings.Contains(out, "  190 keys valid (") {
		t.Errorf("no summary line for the 190 valid keys:\n%s", out)
	}
	h := Headline(r.Result)
	wantH := "key k3 invalid: process 3 wrote 7 with token 3 after token 9 was admitted: a stale lease holder's write was accepted; also invalid: k7, k9, k11, k13, k20 and 2 more; unknown: k2 and k30"
	if h != wantH {
		t.Errorf("headline\n got %q\nwant %q", h, wantH)
	}
	if !strings.Contains(out, "INVALID: "+wantH+"\n") {
		t.Errorf("the terminal verdict is not the headline:\n%s", out)
	}
}

// A few keys are all listed, failing first, then the valid ones in
// natural order.
func TestSummaryOfAFewKeysListsEach(t *testing.T) {
	r := manyKeys(10, []int{}, []int{9})
	var buf bytes.Buffer
	Summary(&buf, r)
	var got []string
	for _, m := range regexp.MustCompile(`(?m)^  key (\S+) +(\S+)`).FindAllStringSubmatch(buf.String(), -1) {
		got = append(got, m[1])
	}
	if want := "k9 k0 k1 k2 k3 k4 k5 k6 k7 k8"; strings.Join(got, " ") != want {
		t.Errorf("keys listed %q, want %q", strings.Join(got, " "), want)
	}
	if !strings.Contains(buf.String(), "UNKNOWN: key k9: the search timed out") {
		t.Errorf("the verdict does not name key k9:\n%s", buf.String())
	}
}

func TestHeadline(t *testing.T) {
	for _, c := range []struct {
		name string
		res  models.Result
		want string
	}{
		{"one key keeps the checker's words", manyKeys(1, []int{0}, nil).Result,
			"process 0 wrote 7 with token 3 after token 9 was admitted: a stale lease holder's write was accepted"},
		{"valid", manyKeys(5, nil, nil).Result, ""},
		{"two invalid", manyKeys(12, []int{10, 2}, nil).Result,
			"key k2 invalid: process 2 wrote 7 with token 3 after token 9 was admitted: a stale lease holder's write was accepted; also invalid: k10"},
		{"unknown keys, the key not repeated", manyKeys(12, nil, []int{11, 4}).Result,
			"key k4: the search timed out after 1s with 40 ops; also unknown: k11"},
		{"a run that did not complete", models.Result{Verdict: models.Unknown, Explanation: "the run did not complete: no Docker",
			Keys: manyKeys(3, nil, []int{1}).Result.Keys}, "the run did not complete: no Docker (unknown: k1)"},
		{"an incomplete run whose keys are valid", models.Result{Verdict: models.Unknown, Explanation: "the run did not complete: no Docker",
			Keys: manyKeys(3, nil, nil).Result.Keys}, "the run did not complete: no Docker"},
	} {
		if got := Headline(c.res); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
	// The key whose violation the run's sentence tells (the first in
	// time) leads, whatever its name.
	late := manyKeys(12, []int{10, 2}, nil).Result
	late.Explanation = late.Keys[2].Explanation + " (and 1 more key invalid)"
	if late.Keys[2].Key != "k10" {
		t.Fatalf("keys out of the expected order: %v", late.Keys)
	}
	if got, want := Headline(late), "key k10 invalid: process 10 wrote 7 with token 3 after token 9 was admitted: a stale lease holder's write was accepted; also invalid: k2"; got != want {
		t.Errorf("first in time:\n got %q\nwant %q", got, want)
	}
	if got := nameKeys([]string{"k1", "k2", "k3", "k4", "k5", "k6", "k7"}); got != "k1, k2, k3, k4, k5 and 2 more" {
		t.Errorf("nameKeys: %q", got)
	}
}

// The HTML page: the headline names the key, and the key table starts
// with the invalid key and runs in natural order after it.
func TestHTMLOfAThousandKeys(t *testing.T) {
	r := manyKeys(1000, []int{487}, []int{12})
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	m := regexp.MustCompile(`id="explanation">([^<]*)<`).FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(m[1], "key k487 invalid: process 487 wrote 7") || !strings.HasSuffix(m[1], "; unknown: k12") {
		t.Errorf("the headline does not name the failing keys: %q", m)
	}
	table := out[strings.Index(out, `<table id="keys">`):]
	table = table[:strings.Index(table, "</table>")]
	var rows []string
	for _, m := range regexp.MustCompile(`<tr><td class="mono">([^<]*)</td>`).FindAllStringSubmatch(table, -1) {
		rows = append(rows, m[1])
	}
	if len(rows) != 1000 {
		t.Fatalf("the key table has %d rows, want 1000", len(rows))
	}
	if want := "k487 k12 k0 k1 k2 k3 k4 k5 k6 k7 k8 k9 k10 k11 k13"; strings.Join(rows[:15], " ") != want {
		t.Errorf("the key table starts %q, want %q", strings.Join(rows[:15], " "), want)
	}
	if rows[999] != "k999" {
		t.Errorf("the key table ends with %s, want k999", rows[999])
	}
}

// results.json lists keys in natural order and its explanation is the
// headline; JUnit's cases are in natural order too.
func TestResultsAndJUnitInNaturalOrder(t *testing.T) {
	r := manyKeys(1000, []int{487}, nil)
	var buf bytes.Buffer
	if err := WriteResults(&buf, r); err != nil {
		t.Fatal(err)
	}
	var res Results
	if err := json.Unmarshal(buf.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	for i, k := range res.Keys {
		if want := fmt.Sprintf("k%d", i); k.Key != want {
			t.Fatalf("results.json keys[%d] is %s, want %s", i, k.Key, want)
		}
	}
	if !strings.HasPrefix(res.Explanation, "key k487 invalid: ") {
		t.Errorf("results.json explanation %q does not name key k487", res.Explanation)
	}
	buf.Reset()
	if err := WriteJUnit(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	cases := doc.Suites[0].Cases
	if len(cases) != 1000 || cases[2].Name != "key k2" || cases[10].Name != "key k10" || cases[487].Failure == nil {
		t.Errorf("JUnit cases not in natural order: %d cases, [2] %s, [10] %s", len(cases), cases[2].Name, cases[10].Name)
	}
}

// The step summary shows the failing keys and one row for the valid ones.
func TestStepSummaryOfAThousandKeys(t *testing.T) {
	r := manyKeys(1000, []int{487}, nil)
	out := StepSummary(r)
	if !strings.Contains(out, "key k487 invalid: ") {
		t.Errorf("the step summary does not name key k487:\n%s", out)
	}
	if n := strings.Count(out, "\n| "); n != 3 {
		t.Errorf("the step summary's key table has %d lines, want 3 (the header, k487 and the valid ones):\n%s", n, out)
	}
	if !strings.Contains(out, "| k487 | invalid |") || !strings.Contains(out, "| 999 other keys | valid | 12–40 ops each |") {
		t.Errorf("the step summary's key table:\n%s", out)
	}
}

// With many keys the page sums the table up above it, naming the failing
// keys, and a run that did not finish says what it did not do.
func TestHTMLSumsManyKeysUpAndSaysARunDidNotFinish(t *testing.T) {
	r := manyKeys(1000, []int{487}, []int{12})
	r.Interrupted = true
	r.Incomplete = "interrupted after 3.0 s of the 1m0s workload, before the final reads"
	var buf bytes.Buffer
	if err := WriteHTML(&buf, r); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	m := regexp.MustCompile(`id="keys-summary">([^<]*)<`).FindStringSubmatch(out)
	if m == nil || !strings.HasPrefix(m[1], "1000 keys: 998 valid (") || !strings.Contains(m[1], "1 invalid (k487), 1 unknown (k12)") {
		t.Errorf("no summary of the keys naming the failing ones: %q", m)
	}
	m = regexp.MustCompile(`id="incomplete">([^<]*)<`).FindStringSubmatch(out)
	if m == nil || !strings.Contains(m[1], "interrupted after 3.0 s of the 1m0s workload") {
		t.Errorf("the page does not say the run did not finish: %q", m)
	}
	if strings.Contains(out, `id="interrupted"`) {
		t.Error("an incomplete run is described twice")
	}
	small := manyKeys(3, []int{1}, nil)
	buf.Reset()
	if err := WriteHTML(&buf, small); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), `id="keys-summary"`) {
		t.Error("three keys need no summary line")
	}
}
