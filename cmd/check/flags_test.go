package main

import (
	"strings"
	"testing"
)

// A number that is not one is named with the flag and an example, not
// with Go's parser's words.
func TestMalformedNumbersNameTheFlag(t *testing.T) {
	for args, want := range map[string]string{
		"--seed abc":         `check: --seed: "abc" is not a whole number (e.g. --seed 42)`,
		"--clients many":     `check: --clients: "many" is not a whole number (e.g. --clients 5)`,
		"--nodes 3.5":        `check: --nodes: "3.5" is not a whole number (e.g. --nodes 3)`,
		"--time-limit ten":   `check: --time-limit: "ten" is not a duration (e.g. --time-limit 30s)`,
		"--keep-cluster=yes": `check: --keep-cluster: "yes" is not true or false (e.g. --keep-cluster or --keep-cluster=false)`,
	} {
		code, _, stderr := runCLI(t, append(strings.Fields(args), "--store", t.TempDir())...)
		if code != 254 || !strings.HasPrefix(stderr, want+"\n") {
			t.Errorf("%s: exit %d, stderr %q\nwant it to start with %q", args, code, stderr, want)
		}
		if strings.Contains(stderr, "strconv") || strings.Contains(stderr, "invalid syntax") {
			t.Errorf("%s: Go's own words: %q", args, stderr)
		}
	}
	code, _, stderr := runCLI(t, "analyze", "--check-timeout", "soon", "x.jsonl")
	if code != 254 || !strings.HasPrefix(stderr, `check: --check-timeout: "soon" is not a duration (e.g. --check-timeout 5m0s)`) {
		t.Errorf("analyze --check-timeout soon: exit %d, %q", code, stderr)
	}
}
