package main

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/reports"
)

// A run with no fault cannot tell a safe lock from an unsafe one: it says
// so on the verdict line, in results.json, the report, JUnit and the
// step summary; held to --min-exposures 1 it is unknown (exit 2) and names
// the shortfall and its reason. `check report` holds the stored run to
// the setting it ran with, and --min-exposures overrides it.
func TestARunThatExposedNothingSaysSo(t *testing.T) {
	store := t.TempDir()
	junit := filepath.Join(t.TempDir(), "junit.xml")
	summary := filepath.Join(t.TempDir(), "summary.md")
	t.Setenv(reports.StepSummaryEnv, summary)
	code, out, stderr := runCLI(t, append(quick(store), "--fencing", "none", "--nemesis", "none", "--junit", junit)...)
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	const words = "VALID, but not exercised: no holder outlived its lease, so this run cannot tell a safe lock from an unsafe one (no fault was asked for: --nemesis none)."
	if !strings.Contains(out, "\n"+words+"\n") {
		t.Errorf("the verdict line is not %q:\n%s", words, out)
	}
	dir, err := filepath.EvalSymlinks(filepath.Join(store, "latest"))
	if err != nil {
		t.Fatal(err)
	}
	res := readResults(t, dir)
	if res.Verdict != "valid" || res.Exposures == nil || res.Exposures.Exposures != 0 || !strings.Contains(res.Exposures.Reason, "--nemesis none") {
		t.Errorf("results.json: verdict %s, exposures %+v", res.Verdict, res.Exposures)
	}
	if param(res, "min-exposures") != "0" {
		t.Errorf("min-exposures parameter %q, want 0 (no fault)", param(res, "min-exposures"))
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !strings.Contains(string(html), `id="unexercised"`) || !strings.Contains(string(html), "cannot tell a safe lock from an unsafe one") {
		t.Error("the report's header does not say the run was not exercised")
	}
	var suites struct {
		Suites []struct {
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Cases []struct {
				Name    string `xml:"name,attr"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, &suites); err != nil || len(suites.Suites) != 1 {
		t.Fatalf("junit: %v\n%s", err, b)
	}
	skipped, prop := false, ""
	for _, c := range suites.Suites[0].Cases {
		skipped = skipped || (c.Name == "exposures" && c.Skipped != nil && strings.Contains(c.Skipped.Message, "not exercised"))
	}
	for _, p := range suites.Suites[0].Props {
		if p.Name == "exposures.count" {
			prop = p.Value
		}
	}
	if !skipped || prop != "0" {
		t.Errorf("JUnit: the case exposures is not skipped as not exercised, or exposures.count is %q:\n%s", prop, b)
	}
	if md, _ := os.ReadFile(summary); !strings.Contains(string(md), "VALID, but not exercised") {
		t.Errorf("the step summary does not say so:\n%s", md)
	}

	// The same, held to one exposure: unknown, with the shortfall.
	code, out, _ = runCLI(t, append(quick(store), "--fencing", "none", "--nemesis", "none", "--min-exposures", "1")...)
	if code != 2 {
		t.Fatalf("--min-exposures 1 with no fault: exit %d, want 2\n%s", code, out)
	}
	if !regexp.MustCompile(`(?m)^UNKNOWN: 0 exposures, fewer than --min-exposures 1: no holder outlived its lease, .*\(no fault was asked for: --nemesis none\)$`).MatchString(out) {
		t.Errorf("the verdict line does not name the shortfall and its reason:\n%s", out)
	}
	// check report keeps the setting the run had, and takes a new one.
	if code, out, _ := runCLI(t, "report", dir); code != 0 || !strings.Contains(out, words) {
		t.Errorf("report of the first run: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, "report", "--min-exposures", "1", dir); code != 2 || !strings.Contains(out, "fewer than --min-exposures 1") {
		t.Errorf("report --min-exposures 1: exit %d\n%s", code, out)
	}
	if code, out, _ := runCLI(t, "analyze", "--min-exposures", "1", dir); code != 2 || !strings.Contains(out, "fewer than --min-exposures 1") {
		t.Errorf("analyze --min-exposures 1: exit %d\n%s", code, out)
	}
}

// Under a fault aimed at a holder a run must put safety at stake by
// default; the fenced twin of an unfenced run names its exposures, all
// refused. A negative --min-exposures is refused before anything runs.
func TestAFencedRunNamesItsExposures(t *testing.T) {
	store := t.TempDir()
	code, out, _ := runCLI(t, append(quick(store), "--fencing", "all", "--nemesis", "pause-holder")...)
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	res := readResults(t, filepath.Join(store, "latest"))
	x := res.Exposures
	if param(res, "min-exposures") != "1" || x == nil || x.Exposures == 0 || x.Refused+x.NotSent != x.Exposures-x.Unknown || x.Admitted != 0 {
		t.Fatalf("min-exposures %s, exposures %+v: want 1, and some, none admitted", param(res, "min-exposures"), x)
	}
	if !regexp.MustCompile(`(?m)^VALID: \d+ holders? outlived (its|their) lease`).MatchString(out) || !strings.Contains(out, "admitted: at most") {
		t.Errorf("the verdict and summary do not name the exposures and the bound:\n%s", out)
	}
	for _, bad := range [][]string{{"--min-exposures", "-1"}, {"report", "--min-exposures", "-2", store}, {"analyze", "--min-exposures", "-3", store}} {
		args := bad
		if bad[0] == "--min-exposures" {
			args = append(quick(t.TempDir()), bad...)
		}
		code, _, stderr := runCLI(t, args...)
		if code != 254 || !strings.Contains(stderr, "min-exposures") || !strings.Contains(stderr, "0 or more") {
			t.Errorf("%v: exit %d, %q; want 254 naming --min-exposures", bad, code, stderr)
		}
	}
}

// --exposures ends the workload once that many were seen, well before a
// long time limit, and the run is complete (valid), saying what ended it.
func TestExposuresEndTheWorkload(t *testing.T) {
	store := t.TempDir()
	args := []string{"--backend", "memory", "--fencing", "all", "--nemesis", "pause-holder", "--lease-ttl", "200ms",
		"--nemesis-interval", "300ms", "--time-limit", "2m", "--exposures", "3", "--store", store}
	code, out, _ := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s", code, out)
	}
	res := readResults(t, filepath.Join(store, "latest"))
	if res.EndedBy != "exposures" || res.Exposures == nil || res.Exposures.Exposures < 3 || res.Incomplete != "" {
		t.Errorf("ended by %q with exposures %+v, incomplete %q: want ended by exposures, at least 3, complete", res.EndedBy, res.Exposures, res.Incomplete)
	}
	if res.DurationS > 60 {
		t.Errorf("the run took %.0f s: --exposures did not end it", res.DurationS)
	}
	if !strings.Contains(out, "the workload ended once the exposures asked for were seen (--exposures)") {
		t.Errorf("the summary does not say what ended the workload:\n%s", out)
	}
}
