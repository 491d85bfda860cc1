package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Every output path is checked before anything starts: a bad one is bad
// input (254) naming the flag, and the store is left untouched.
func TestOutputPathsAreCheckedBeforeTheRun(t *testing.T) {
	tmp := t.TempDir()
	afile := filepath.Join(tmp, "afile")
	os.WriteFile(afile, []byte("x"), 0o644)
	store := filepath.Join(tmp, "store")
	os.MkdirAll(filepath.Join(store), 0o755)
	os.WriteFile(filepath.Join(store, "taken"), []byte("x"), 0o644)
	common := []string{"--backend", "memory", "--time-limit", "1s"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--junit", tmp, "--store", store}, "--junit: " + tmp + " is a directory"},
		{[]string{"--junit", filepath.Join(afile, "junit.xml"), "--store", store}, "--junit: "},
		{[]string{"--store", afile}, "--store: " + afile + " is a file, not a directory"},
		{[]string{"--store", filepath.Join(afile, "sub")}, "--store: "},
		{[]string{"--store", store, "--name", "taken"}, "--name: "},
	} {
		code, out, errOut := runCLI(t, append(append([]string{}, common...), c.args...)...)
		if code != 254 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 254 saying %q\n%s", c.args, code, errOut, c.want, out)
		}
	}
	if entries, _ := os.ReadDir(store); len(entries) != 1 {
		t.Errorf("a refused run created something in the store: %v", entries)
	}
	// The same for a comparison's --store.
	if code, _, errOut := runCLI(t, "compare", "--backends", "memory", "--faults", "pause", "--time-limit", "1s", "--store", afile); code != 254 || !strings.Contains(errOut, "--store: ") {
		t.Errorf("compare --store FILE: exit %d, %q", code, errOut)
	}
	// The same for check report's --junit.
	if code, _, errOut := runCLI(t, "report", "--junit", tmp, store); code != 254 || !strings.Contains(errOut, "--junit: ") {
		t.Errorf("report --junit DIR: exit %d, %q", code, errOut)
	}
	// And --check-timeout of a re-check must be positive.
	for _, d := range []string{"0", "-1s"} {
		for _, sub := range []string{"analyze", "report"} {
			if code, _, errOut := runCLI(t, sub, "--check-timeout", d, store); code != 254 || !strings.Contains(errOut, "--check-timeout: ") {
				t.Errorf("%s --check-timeout %s: exit %d, %q", sub, d, code, errOut)
			}
		}
	}
}

// A file that cannot be written after the check never hides the
// verdict: an invalid run whose JUnit file's directory became a file
// during the run still exits 1, prints its verdict and says beside it
// what was not written.
func TestAnOutputNotWrittenLeavesTheVerdict(t *testing.T) {
	tmp := t.TempDir()
	sub := filepath.Join(tmp, "ci")
	junit := filepath.Join(sub, "junit.xml")
	timer := time.AfterFunc(time.Second, func() {
		os.RemoveAll(sub)
		os.WriteFile(sub, []byte("in the way"), 0o644)
	})
	defer timer.Stop()
	code, out, errOut := runCLI(t, "--backend", "memory", "--fencing", "none", "--nemesis", "pause-holder", "--time-limit", "3s",
		"--lease-ttl", "200ms", "--nemesis-interval", "400ms", "--seed", "7", "--junit", junit, "--store", filepath.Join(tmp, "store"))
	if code != 1 || !strings.Contains(out, "INVALID: ") {
		t.Fatalf("exit %d, want 1 (invalid) whatever happened to the JUnit file\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "also: the JUnit file "+junit+" was not written") || !strings.Contains(out, "(the verdict above stands)") {
		t.Errorf("the output does not say the JUnit file was not written:\n%s", out)
	}
}
