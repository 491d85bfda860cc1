package main

import (
	"regexp"
	"strings"
	"testing"
)

// With many keys, the run's summary and check analyze list only the keys
// that failed, sum the valid ones up in a line, and name a failing key in
// the verdict.
func TestManyKeysOnTheTerminal(t *testing.T) {
	store := t.TempDir()
	code, out, stderr := runCLI(t, append(quick(store), "--fencing", "none", "--nemesis", "pause-holder", "--keys", "12", "--clients", "8", "--seed", "11")...)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", code, out, stderr)
	}
	_, analyzed, _ := runCLI(t, "analyze", store+"/latest")
	keyLine := regexp.MustCompile(`(?m)^ *key (k\d+) +(\w+) +\(`)
	validLine := regexp.MustCompile(`(?m)^ *(\d+) keys? valid \(\d+(–\d+)? ops placed each\)$`)
	for name, text := range map[string]string{"summary": out, "analyze": analyzed} {
		lines := keyLine.FindAllStringSubmatch(text, -1)
		if len(lines) == 0 {
			t.Errorf("%s lists no failing key:\n%s", name, text)
			continue
		}
		for _, l := range lines {
			if l[2] == "valid" {
				t.Errorf("%s lists the valid key %s one by one:\n%s", name, l[1], text)
			}
		}
		if len(lines) < 12 && !validLine.MatchString(text) {
			t.Errorf("%s does not sum up the valid keys:\n%s", name, text)
		}
		// The verdict names the key whose stale write came first in time
		// (verdict.Settle), which need not be the first listed: with two
		// failing keys either may be it, and it must be one of them.
		var failing []string
		for _, l := range lines {
			failing = append(failing, regexp.QuoteMeta(l[1]))
		}
		if !regexp.MustCompile(`(?m)^INVALID: key (` + strings.Join(failing, "|") + `) invalid: `).MatchString(text) {
			t.Errorf("%s's verdict names none of the failing keys %v:\n%s", name, failing, text)
		}
		if strings.Count(text, "\n") > 40 {
			t.Errorf("%s is %d lines long", name, strings.Count(text, "\n"))
		}
	}
}
