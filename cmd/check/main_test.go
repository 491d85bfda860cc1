package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"github.com/fencecheck/fencecheck/history/simulate"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/history"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestMemoryRunExitCodes(t *testing.T) {
	store := t.TempDir()
	common := []string{"--backend", "memory", "--time-limit", "3s", "--lease-ttl", "200ms", "--nemesis-interval", "400ms", "--store", store}
	code, out, _ := runCLI(t, append(common, "--fencing", "none", "--nemesis", "pause-holder", "--seed", "7")...)
	if code != 1 {
		t.Fatalf("unfenced run exited %d, want 1\n%s", code, out)
	}
	if !strings.Contains(out, "INVALID: process") || !strings.Contains(out, "a stale lease holder's write was accepted") {
		t.Errorf("the summary does not name the stale write:\n%s", out)
	}
	if !strings.Contains(out, "--seed 7") {
		t.Errorf("the summary does not give the rerun command with its seed:\n%s", out)
	}

	// check analyze on the saved history agrees.
	hist := filepath.Join(store, "latest", "history.jsonl")
	code, out, _ = runCLI(t, "analyze", hist)
	if v := verdictLine(out); code != 1 || v != "INVALID" {
		t.Fatalf("analyze exited %d with verdict %q, want 1 and INVALID:\n%s", code, v, out)
	}
	if !strings.Contains(out, "a stale lease holder's write was accepted") {
		t.Errorf("analyze does not name the stale write, as the run did:\n%s", out)
	}

	code, out, _ = runCLI(t, append(common, "--fencing", "all", "--nemesis", "pause-holder")...)
	if code != 0 {
		t.Fatalf("fenced run exited %d, want 0\n%s", code, out)
	}
	code, out, _ = runCLI(t, "analyze", filepath.Join(store, "latest"))
	if v := verdictLine(out); code != 0 || v != "VALID" {
		t.Fatalf("analyze of a directory exited %d with verdict %q, want 0 and VALID:\n%s", code, v, out)
	}
}

// verdictLine is the verdict analyze ends its output with: the last line's
// first word ("VALID: ...", "VALID, but not exercised: ...", "INVALID:
// ..." or "UNKNOWN: ...").
func verdictLine(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	last := lines[len(lines)-1]
	word, _, _ := strings.Cut(last, ":")
	word, _, _ = strings.Cut(word, ",")
	return word
}

func TestBadArgumentsExit254AndNameTheFlag(t *testing.T) {
	cases := [][]string{
		{"--backend", "consul"},
		{"--fencing", "maybe"},
		{"--nemesis", "pause,clock"},
		{"--clients", "0"},
		{"--time-limit", "ten"},
		{"--lease-ttl", "1ns"},
		{"--no-such-flag"},
		{"stray-argument"},
		{"analyze"},
		{"--check-memory", "lots"},
		{"--check-memory", "1MiB"},
	}
	for _, args := range cases {
		code, _, stderr := runCLI(t, append(args, "--store", t.TempDir())...)
		if code != 254 {
			t.Errorf("%v: exit %d, want 254 (stderr %q)", args, code, stderr)
			continue
		}
		if !strings.HasPrefix(args[0], "--") {
			continue
		}
		flag := strings.TrimPrefix(args[0], "--")
		if !strings.Contains(stderr, flag) {
			t.Errorf("%v: the message %q does not name --%s", args, stderr, flag)
		}
	}
	_, _, stderr := runCLI(t, "--nemesis", "clock")
	if !strings.Contains(stderr, "the clock faults are clock-jump") {
		t.Errorf("--nemesis clock does not explain why: %q", stderr)
	}
}

// A clock fault on a backend whose servers libfaketime cannot reach is
// refused before anything starts, with the backend's own reason.
func TestClockFaultOnEtcdIsRefusedWithTheReason(t *testing.T) {
	for _, backend := range []string{"etcd", "memory"} {
		code, _, stderr := runCLI(t, "--backend", backend, "--cluster", "docker", "--nemesis", "clock-jump", "--store", t.TempDir())
		if code != 254 || !strings.Contains(stderr, "static Go binary") || !strings.Contains(stderr, "monotonic clock") {
			t.Errorf("%s --nemesis clock-jump: exit %d, %q; want 254 with the reason", backend, code, stderr)
		}
	}
}

func TestAnalyzeMalformedHistoryNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"truncated mid-file": `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":2,"process":0,"type":"ok","f":"acq
{"index":2,"time":3,"process":1,"type":"invoke","f":"acquire","key":"k0"}`,
		"unknown f":    `{"index":0,"time":1,"process":0,"type":"invoke","f":"cas","key":"k0"}`,
		"unknown type": `{"index":0,"time":1,"process":0,"type":"done","f":"read","key":"k0","token":1}`,
		"completion without invoke": `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":2,"process":1,"type":"ok","f":"acquire","key":"k0","token":1}`,
		"duplicate index": `{"index":0,"time":1,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":0,"time":2,"process":0,"type":"ok","f":"acquire","key":"k0","token":1}`,
		"time backwards": `{"index":0,"time":5,"process":0,"type":"invoke","f":"acquire","key":"k0"}
{"index":1,"time":2,"process":0,"type":"ok","f":"acquire","key":"k0","token":1}`,
	}
	wantLine := map[string]string{"truncated mid-file": "line 2", "unknown f": "line 1", "unknown type": "line 1",
		"completion without invoke": "line 2", "duplicate index": "line 2", "time backwards": "line 2"}
	for name, body := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".jsonl")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runCLI(t, "analyze", path)
		if code != 254 || !strings.Contains(stderr, wantLine[name]) {
			t.Errorf("%s: exit %d, stderr %q; want 254 and %q", name, code, stderr, wantLine[name])
		}
	}
	code, _, stderr := runCLI(t, "analyze", filepath.Join(dir, "missing.jsonl"))
	if code != 254 || !strings.Contains(stderr, "missing.jsonl") {
		t.Errorf("missing file: exit %d, %q", code, stderr)
	}
}

func writeSynthetic(t *testing.T, s simulate.Synthetic) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	err = s.Events(func(e history.Event) error {
		b, err := json.Marshal(e)
		if err != nil {
			return err
		}
		w.Write(b)
		return w.WriteByte('\n')
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// analyze streams the history: it says the violation as it finds it, and a
// check that runs out of time says so and how to give it more.
func TestAnalyzeStreamsAndSaysWhyItStopped(t *testing.T) {
	invalid := writeSynthetic(t, simulate.Synthetic{Seed: 3, Ops: 20000, Keys: 2, Clients: 5, PauseRate: 0.01})
	code, out, _ := runCLI(t, "analyze", "--check-memory", "2GiB", invalid)
	if code != 1 || !strings.Contains(out, "violation found after") || !strings.Contains(out, "INVALID") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	long := writeSynthetic(t, simulate.Synthetic{Seed: 1, Ops: 300000, Keys: 1, Clients: 5, Fenced: true})
	code, out, _ = runCLI(t, "analyze", "--check-timeout", "10ms", long)
	if code != 2 || !strings.Contains(out, "UNKNOWN: key k0: the check timed out after 10ms (--check-timeout); raise it with --check-timeout 30m") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
