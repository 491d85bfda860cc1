package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The issue as it was reported: a fenced run of a minute gets SIGINT after
// 3 s. It must not look green: exit 2 (unknown), results.json unknown with
// the reason, JUnit not passing; and `check report` of the stored run
// settles it the same way.
func TestSIGINTAfterThreeSecondsIsUnknown(t *testing.T) {
	// Our own registration keeps a stray SIGINT from killing the test
	// binary, whatever the command does with it.
	guardSIGINT(t)

	store := t.TempDir()
	junit := filepath.Join(t.TempDir(), "junit.xml")
	timer := time.AfterFunc(3*time.Second, func() { syscall.Kill(os.Getpid(), syscall.SIGINT) })
	defer timer.Stop()
	began := time.Now()
	code, out, errOut := runCLI(t, "--backend", "memory", "--fencing", "all", "--nemesis", "pause", "--time-limit", "60s",
		"--lease-ttl", "200ms", "--nemesis-interval", "400ms", "--junit", junit, "--store", store)
	took := time.Since(began)
	if took < 3*time.Second || took > 30*time.Second {
		t.Fatalf("the run took %s: the interrupt did not end it\n%s%s", took, out, errOut)
	}
	if code != 2 {
		t.Fatalf("exit %d, want 2 (unknown)\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "UNKNOWN: interrupted after 3.") || !strings.Contains(out, "of the 1m0s workload") {
		t.Errorf("the summary does not say how far the run got:\n%s", out)
	}
	var res struct{ Verdict, Explanation, Incomplete string }
	b, err := os.ReadFile(filepath.Join(store, "latest", "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Verdict != "unknown" || res.Incomplete == "" {
		t.Errorf("results.json: verdict %q, incomplete %q", res.Verdict, res.Incomplete)
	}
	if f, e := junitFailures(t, junit); f+e == 0 {
		t.Errorf("the JUnit report passes an interrupted run")
	}

	// Checked again from the store: still unknown, not valid.
	junit2 := filepath.Join(t.TempDir(), "junit.xml")
	code, out, errOut = runCLI(t, "report", "--junit", junit2, filepath.Join(store, "latest"))
	if code != 2 {
		t.Fatalf("check report exited %d, want 2\n%s%s", code, out, errOut)
	}
	if f, e := junitFailures(t, junit2); f+e == 0 {
		t.Errorf("check report's JUnit passes an interrupted run")
	}
}

func junitFailures(t *testing.T, path string) (failures, errors int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Failures, doc.Errors
}

// guardSIGINT registers the test's own SIGINT handler for the test's
// length, so that a SIGINT the test sends itself never kills the test
// binary, whatever the command under test does with it.
func guardSIGINT(t *testing.T) {
	guard := make(chan os.Signal, 4)
	signal.Notify(guard, syscall.SIGINT)
	t.Cleanup(func() { signal.Stop(guard) })
}
