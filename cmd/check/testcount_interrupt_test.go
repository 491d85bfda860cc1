package main

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// An interrupt during --test-count ends the test going on (healed,
// checked and reported as usual) and the loop with it: one run directory,
// one test line; the interrupted test found no violation, so its verdict
// is unknown and so is the loop's (exit 2).
func TestInterruptStopsTheTestCountLoop(t *testing.T) {
	bin := buildCheck(t)
	store := t.TempDir()
	cmd := exec.Command(bin, "--backend", "memory", "--fencing", "all", "--nemesis", "pause", "--time-limit", "20s",
		"--lease-ttl", "200ms", "--nemesis-interval", "400ms", "--store", store, "--test-count", "5", "--keep-going")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	sc := bufio.NewScanner(stdout)
	signalled := false
	deadline := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for sc.Scan() {
		line := sc.Text()
		out.WriteString(line + "\n")
		// Interrupt once the workload of the first test is under way.
		if !signalled && strings.Contains(line, "workload:") {
			signalled = true
			time.Sleep(500 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGINT)
		}
	}
	err = cmd.Wait()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^test 1/5: (\w+), `).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no line for test 1 (exit %d):\n%s\n%s", code, out.String(), stderr.String())
	}
	if m[1] != "unknown" || code != 2 {
		t.Errorf("test 1 was %s and check exited %d, want unknown and 2\n%s", m[1], code, out.String())
	}
	for _, want := range []string{"interrupted after test 1 of 5", "1 of 5 tests run: 1 " + m[1] + "\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the output has no %q:\n%s", want, out.String())
		}
	}
	runs, _ := filepath.Glob(filepath.Join(store, "memory-lease-fenced-all-pause", "*"))
	if len(runs) != 1 {
		t.Errorf("%d run directories, want 1: %v", len(runs), runs)
	}
	for _, r := range runs {
		if _, err := os.Stat(filepath.Join(r, "results.json")); err != nil {
			t.Errorf("the interrupted test wrote no results.json: %v", err)
		}
	}
}
