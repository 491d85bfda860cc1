package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/compare"
	"github.com/fencecheck/fencecheck/compare/result"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/reports"
)

// quick are the flags of a short in-process run.
func quick(store string) []string {
	return []string{"--backend", "memory", "--time-limit", "2s", "--lease-ttl", "200ms", "--nemesis-interval", "400ms", "--store", store}
}

func readResults(t *testing.T, dir string) reports.Results {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r reports.Results
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func param(r reports.Results, name string) string {
	for _, p := range r.Params {
		if p.Name == name {
			return p.Value
		}
	}
	return "<none>"
}

var testLine = regexp.MustCompile(`(?m)^test (\d+)/(\d+): (\w+), seed (\d+), (?:(\d+) exposures?[^/]*, )?(\S+)/report\.html$`)

// --test-count stops at the first run that is not valid.
func TestTestCountStopsAtTheFirstInvalidRun(t *testing.T) {
	store := t.TempDir()
	code, out, stderr := runCLI(t, append(quick(store), "--fencing", "none", "--nemesis", "pause-holder", "--seed", "40", "--test-count", "3")...)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	lines := testLine.FindAllStringSubmatch(out, -1)
	if len(lines) != 1 || lines[0][1] != "1" || lines[0][3] != "invalid" || lines[0][4] != "40" {
		t.Fatalf("test lines %q, want one: test 1/3 invalid, seed 40\n%s", lines, out)
	}
	if !strings.Contains(out, "1 of 3 tests run: 1 invalid; stopped at the first test that was not valid") {
		t.Errorf("no closing summary:\n%s", out)
	}
}

// With --keep-going every run is carried out, each with its own seed and
// directory; the exit code is the worst verdict. --concurrency sets the
// client count (2n on memory, which runs one server: 2 clients), and the
// rerun command of each run is a single test.
func TestTestCountKeepGoingAndConcurrency(t *testing.T) {
	store := t.TempDir()
	args := append(quick(store), "--fencing", "none", "--nemesis", "pause-holder", "--seed", "70", "--test-count", "3", "--keep-going", "--concurrency", "2n")
	code, out, stderr := runCLI(t, args...)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	lines := testLine.FindAllStringSubmatch(out, -1)
	if len(lines) != 3 {
		t.Fatalf("%d test lines, want 3:\n%s", len(lines), out)
	}
	dirs := map[string]bool{}
	for i, l := range lines {
		if l[1] != fmt.Sprint(i+1) || l[2] != "3" || l[4] != fmt.Sprint(70+i) {
			t.Errorf("line %d: %q", i, l[0])
		}
		dirs[l[6]] = true
		res := readResults(t, l[6])
		if string(res.Verdict) != l[3] {
			t.Errorf("%s: results.json says %s, the line %s", l[6], res.Verdict, l[3])
		}
		if param(res, "seed") != fmt.Sprint(70+i) || param(res, "clients") != "2" || param(res, "nodes") != "1" {
			t.Errorf("%s: seed %s clients %s nodes %s, want %d, 2 and 1", l[6], param(res, "seed"), param(res, "clients"), param(res, "nodes"), 70+i)
		}
		if strings.Contains(res.Command, "--test-count") || strings.Contains(res.Command, "--keep-going") ||
			strings.Contains(res.Command, "--concurrency") || !strings.Contains(res.Command, "--clients 2") {
			t.Errorf("%s: the rerun command %q is not one test with --clients 2", l[6], res.Command)
		}
	}
	// The exposures pooled over the tests are the sum of each test's.
	sum := 0
	for _, l := range lines {
		n, err := strconv.Atoi(l[5])
		if err != nil {
			t.Fatalf("test line %q names no exposures", l[0])
		}
		if res := readResults(t, l[6]); res.Exposures == nil || res.Exposures.Exposures != n {
			t.Errorf("%s: results.json's exposures %+v, the line %d", l[6], res.Exposures, n)
		}
		sum += n
	}
	if want := fmt.Sprintf("exposures pooled over 3 tests: %d exposure", sum); !strings.Contains(out, want) {
		t.Errorf("no pooled line %q:\n%s", want, out)
	}
	if len(dirs) != 3 {
		t.Errorf("the tests shared directories: %v", dirs)
	}
	if !regexp.MustCompile(`3 of 3 tests run: (\d+ valid, )?\d+ invalid\n`).MatchString(out) {
		t.Errorf("no closing summary:\n%s", out)
	}
}

func TestTestCountAllValid(t *testing.T) {
	store := t.TempDir()
	code, out, stderr := runCLI(t, append(quick(store), "--fencing", "all", "--nemesis", "pause", "--test-count", "2", "--concurrency", "3")...)
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	lines := testLine.FindAllStringSubmatch(out, -1)
	if len(lines) != 2 || lines[0][3] != "valid" || lines[1][3] != "valid" {
		t.Fatalf("test lines %q", lines)
	}
	// A random first seed, then the next one.
	var s0, s1 int64
	fmt.Sscan(lines[0][4], &s0)
	fmt.Sscan(lines[1][4], &s1)
	if s1 != s0+1 {
		t.Errorf("seeds %d then %d, want consecutive", s0, s1)
	}
	if !strings.Contains(out, "2 of 2 tests run: 2 valid\n") {
		t.Errorf("no closing summary:\n%s", out)
	}
}

// The loop itself: the worst outcome wins (invalid over could not be
// carried out over unknown over valid), an interrupt stops it, a bad
// argument stops it at once.
func TestRepeatExitCodeIsTheWorst(t *testing.T) {
	failure := errors.New("no Docker")
	for _, c := range []struct {
		name      string
		codes     []int
		keepGoing bool
		stopAfter int
		want      int
		ran       int
	}{
		{"all valid", []int{0, 0, 0}, false, 0, 0, 3},
		{"stops at unknown", []int{0, 2, 1}, false, 0, 2, 2},
		{"keep going: invalid is worst", []int{2, 255, 1, 0}, true, 0, 1, 4},
		{"keep going: failure over unknown", []int{2, 255, 0}, true, 0, 255, 3},
		{"interrupt ends the loop", []int{0, 0, 0, 0}, true, 2, 0, 2},
		{"bad arguments at once", []int{254, 0}, true, 0, 254, 1},
	} {
		ran := 0
		var b strings.Builder
		err := repeat(&b, len(c.codes), 1, c.keepGoing, 100, func() bool { return c.stopAfter > 0 && ran >= c.stopAfter },
			func(i int, seed int64) testResult {
				ran++
				if seed != 100+int64(i-1) {
					t.Errorf("%s: test %d got seed %d", c.name, i, seed)
				}
				code := c.codes[i-1]
				switch code {
				case harness.ExitFailed:
					return testResult{code: code, err: failure}
				case harness.ExitUsage:
					return testResult{code: code, err: usageErr("--clients: 0 is out of range")}
				}
				return testResult{code: code, dir: fmt.Sprintf("store/t/%d", i)}
			})
		got := 0
		var ee *exitError
		if errors.As(err, &ee) {
			got = ee.code
		} else if err != nil {
			t.Errorf("%s: error %v is not an exit code", c.name, err)
		}
		if got != c.want || ran != c.ran {
			t.Errorf("%s: exit %d after %d tests, want %d after %d\n%s", c.name, got, ran, c.want, c.ran, b.String())
		}
		if c.want == harness.ExitFailed && (ee == nil || !errors.Is(ee.err, failure)) {
			t.Errorf("%s: the failure's reason is lost: %v", c.name, err)
		}
	}
}

func TestJepsenFlagsRefuseBadValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--concurrency", "4", "--clients", "5"}, "--concurrency 4 and --clients 5 disagree"},
		{[]string{"--concurrency", "many"}, "--concurrency"},
		{[]string{"--concurrency", "0"}, "--concurrency"},
		{[]string{"--test-count", "0"}, "--test-count"},
		{[]string{"--test-count", "-3"}, "--test-count"},
		{[]string{"--keep-going"}, "--keep-going: goes on after a test that is not valid, so it needs several tests: add --test-count"},
		{[]string{"--keep-going", "--test-count", "1"}, "add --test-count"},
	} {
		store := t.TempDir()
		code, _, stderr := runCLI(t, append(c.args, "--store", store)...)
		if code != harness.ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 254 and %q", c.args, code, stderr, c.want)
		}
		if entries, _ := os.ReadDir(store); len(entries) != 0 {
			t.Errorf("%v: bad arguments left %d entries in the store", c.args, len(entries))
		}
	}
	// The same count both ways is fine.
	if n, err := parseConcurrency("5", 3); n != 5 || err != nil {
		t.Errorf("parseConcurrency(5) = %d, %v", n, err)
	}
	if n, err := parseConcurrency("2n", 5); n != 10 || err != nil {
		t.Errorf("parseConcurrency(2n, 5 nodes) = %d, %v", n, err)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := runCLI(t, "--version")
	if code != 0 || !regexp.MustCompile(`^check (devel|v\S+)( \(.*\))?\n$`).MatchString(out) {
		t.Errorf("check --version: exit %d, %q", code, out)
	}
}

// Every command a person types has an example in its help, and the help
// describes the flags as they behave.
func TestHelpExamplesAndDefaults(t *testing.T) {
	root := newRootCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no example in its help", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, name := range []string{"fenced", "postgres", "etcd"} {
		if u := root.Flags().Lookup("storage").Usage; !strings.Contains(u, name) {
			t.Errorf("--storage's help %q does not list %s", u, name)
		}
	}
	var compareCmd *cobra.Command
	for _, c := range root.Commands() {
		if c.Name() == "compare" {
			compareCmd = c
		}
	}
	u := compareCmd.Flags().Lookup("backends").Usage
	if !strings.Contains(u, strings.Join(compare.DefaultBackends(), ",")) || strings.Contains(u, backendNames()) {
		t.Errorf("compare --backends' help %q does not give its default (%v)", u, compare.DefaultBackends())
	}
	for _, f := range []string{"clients", "keys", "nodes", "lease-ttl"} {
		if fl := compareCmd.Flags().Lookup(f); fl == nil || fl.Hidden {
			t.Errorf("compare has no visible --%s", f)
		}
	}
	if !strings.Contains(root.Example, "--test-count") {
		t.Error("the root command's examples do not show --test-count")
	}
}

// compare applies --clients, --keys, --nodes and --lease-ttl to every
// cell, and refuses bad values before any cell runs.
func TestCompareSharedFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--clients", "0"}, "clients"},
		{[]string{"--keys", "0"}, "keys"},
		{[]string{"--keys", "5000"}, "keys"},
		{[]string{"--lease-ttl", "0s"}, "lease-ttl"},
		{[]string{"--lease-ttl", "1h"}, "lease-ttl"},
		{[]string{"--backends", "etcd", "--nodes", "4"}, "nodes"},
		{[]string{"--nodes", "-1"}, "nodes"},
	} {
		store := filepath.Join(t.TempDir(), "cmp")
		code, _, stderr := runCLI(t, append([]string{"compare", "--store", store, "--backends", "memory"}, c.args...)...)
		if code != harness.ExitUsage || !strings.Contains(stderr, "--"+c.flag) {
			t.Errorf("%v: exit %d, %q; want 254 naming --%s", c.args, code, stderr, c.flag)
		}
		if _, err := os.Stat(store); err == nil {
			t.Errorf("%v: the store was created before the arguments were checked", c.args)
		}
	}

	store := t.TempDir()
	code, out, stderr := runCLI(t, "compare", "--backends", "memory", "--faults", "pause-holder", "--fencing", "all", "--time-limit", "1s",
		"--clients", "2", "--keys", "3", "--lease-ttl", "300ms", "--nemesis-interval", "300ms", "--store", store, "--seed", "3")
	if code != 0 {
		t.Fatalf("compare exited %d\n%s\n%s", code, out, stderr)
	}
	b, err := os.ReadFile(filepath.Join(store, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cmp result.Comparison
	if err := json.Unmarshal(b, &cmp); err != nil {
		t.Fatal(err)
	}
	if cmp.Clients != 2 || cmp.Keys != 3 || cmp.LeaseTTLS != 0.3 || cmp.Nodes != 3 {
		t.Errorf("compare.json shared %d clients, %d keys, %d nodes, lease %v s", cmp.Clients, cmp.Keys, cmp.Nodes, cmp.LeaseTTLS)
	}
	run := cmp.Rows[0].Cells[0].Runs[0]
	res := readResults(t, filepath.Join(store, run.Dir))
	if param(res, "clients") != "2" || param(res, "keys") != "3" || param(res, "lease-ttl") != "300ms" {
		t.Errorf("the run's params: clients %s keys %s lease-ttl %s", param(res, "clients"), param(res, "keys"), param(res, "lease-ttl"))
	}
	md, _ := os.ReadFile(filepath.Join(store, "compare.md"))
	if !strings.Contains(string(md), "2 clients, 3 keys, 3 nodes, lease 0.3 s") {
		t.Errorf("compare.md does not say what every run shared:\n%s", md)
	}
}

// --preset jepsen-etcd sets its own nodes, clients and lease; a flag given
// overrides them and is checked against the preset's rows before anything
// runs.
func TestComparePresetJepsenEtcdFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--nodes", "4"}, "nodes"},
		{[]string{"--faults", "clock"}, "faults"},
		{[]string{"--runs", "101"}, "runs"},
	} {
		store := filepath.Join(t.TempDir(), "cmp")
		code, _, stderr := runCLI(t, append([]string{"compare", "--preset", "jepsen-etcd", "--store", store}, c.args...)...)
		if code != harness.ExitUsage || !strings.Contains(stderr, "--"+c.flag) {
			t.Errorf("%v: exit %d, %q; want 254 naming --%s", c.args, code, stderr, c.flag)
		}
		if _, err := os.Stat(store); err == nil {
			t.Errorf("%v: the store was created before the arguments were checked", c.args)
		}
	}
}

// With several tests each writes its own JUnit file.
func TestJUnitFileOfEachTest(t *testing.T) {
	for _, c := range []struct {
		path     string
		i, count int
		want     string
	}{
		{"junit.xml", 1, 1, "junit.xml"},
		{"out/junit.xml", 2, 3, "out/junit-run2.xml"},
		{"report", 1, 2, "report-run1"},
		{"", 1, 2, ""},
	} {
		if got := junitFor(c.path, c.i, c.count); got != c.want {
			t.Errorf("junitFor(%q, %d, %d) = %q, want %q", c.path, c.i, c.count, got, c.want)
		}
	}
}

// The settings presets refuse, before anything is created, a backend
// that describes no settings of the kind they put side by side.
func TestCompareSettingsPresetsRefuseABackendWithoutSettings(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--preset", "power", "--backends", "kubernetes"}, "describes no durability settings"},
		{[]string{"--preset", "redis-deployments", "--backends", "etcd"}, "describes no deployments"},
		{[]string{"--preset", "etcd-deployments"}, "unknown preset"},
	} {
		store := filepath.Join(t.TempDir(), "cmp")
		code, _, stderr := runCLI(t, append([]string{"compare", "--store", store}, c.args...)...)
		if code != harness.ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %q; want 254 saying %q", c.args, code, stderr, c.want)
		}
		if _, err := os.Stat(store); err == nil {
			t.Errorf("%v: the store was created before the arguments were checked", c.args)
		}
	}
}
