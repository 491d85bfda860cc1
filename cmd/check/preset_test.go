package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/models"
)

// --preset ci-bound runs its schedule as if it had been typed (the
// command that reruns the test says every flag), and prints the exposures
// a minute and the bound they reach: with fencing, none admitted; without
// it, the admitted share.
func TestCIBoundPresetRunsItsScheduleAndPrintsItsBound(t *testing.T) {
	for _, tc := range []struct {
		fencing string
		code    int
		bound   string
	}{
		{"all", 0, `0 of \d+ admitted: at most [\d.]+ % per exposure \(95 %\); a minute at this rate bounds it at [\d.]+ %, and 1 % needs 299 exposures \([\d.]+ min\)`},
		{"none", 1, `\d+ of \d+ admitted: [\d.]+ % per exposure \(95 % interval`},
	} {
		store := t.TempDir()
		code, out, stderr := runCLI(t, "--preset", "ci-bound", "--backend", "memory", "--lease-ttl", "200ms", "--time-limit", "4s", "--fencing", tc.fencing, "--seed", "5", "--store", store)
		if code != tc.code {
			t.Fatalf("fencing %s: exit %d, want %d\n%s\n%s", tc.fencing, code, tc.code, out, stderr)
		}
		line := regexp.MustCompile(`(?m)^ci-bound: (\d+) exposures in [\d.]+ s of workload, (\d+) a minute; ` + tc.bound)
		if !line.MatchString(out) {
			t.Errorf("fencing %s: no ci-bound line matching %s:\n%s", tc.fencing, line, out)
		}
		res := readResults(t, store+"/latest")
		for _, want := range []string{"--preset ci-bound", "--fencing " + tc.fencing, "--nemesis pause-holder", "--keys 10", "--clients 20", "--holders-at-once 10", "--pause-until granted", "--nemesis-interval 500ms", "--time-limit 4s"} {
			if !strings.Contains(res.Command, want) {
				t.Errorf("fencing %s: the command that reruns the test lacks %q: %s", tc.fencing, want, res.Command)
			}
		}
		if res.Exposures == nil || res.Exposures.Exposures < 10 {
			t.Errorf("fencing %s: %v exposures in 4 s of 10 holders at once, want at least 10", tc.fencing, res.Exposures)
		}
	}
}

// The preset's keys follow --keys, with two clients a key and one frozen
// holder a key; flags given win; bad input is refused before anything is
// made.
func TestCIBoundPresetFollowsTheFlagsGiven(t *testing.T) {
	store := t.TempDir()
	code, out, stderr := runCLI(t, "--preset", "ci-bound", "--backend", "memory", "--lease-ttl", "200ms", "--time-limit", "2s", "--keys", "3", "--nemesis-interval", "300ms", "--seed", "5", "--store", store)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	cmd := readResults(t, store+"/latest").Command
	for _, want := range []string{"--keys 3", "--clients 6", "--holders-at-once 3", "--nemesis-interval 300ms"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("command lacks %q: %s", want, cmd)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--preset", "ci-sound"}, `--preset: unknown preset "ci-sound" (accepted: ci-bound`},
		{[]string{"--preset", "ci-bound", "--nemesis", "pause"}, "--preset ci-bound counts the exposures of pause-holder"},
		{[]string{"--preset", "ci-bound", "--keys", "0"}, "--keys: must be at least 1"},
	} {
		empty := t.TempDir()
		code, out, stderr := runCLI(t, append(tc.args, "--backend", "memory", "--store", empty)...)
		if code != 254 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 254 and %q\n%s", tc.args, code, stderr, tc.want, out)
		}
		if entries, _ := os.ReadDir(empty); len(entries) != 0 {
			t.Errorf("%v: refused, yet made %v", tc.args, entries)
		}
	}
}

func TestBoundPerMinute(t *testing.T) {
	x := &models.Exposures{ExposureCounts: models.ExposureCounts{Exposures: 498, Refused: 498}}
	got := boundPerMinute(x, 3*time.Minute)
	want := "ci-bound: 498 exposures in 3.0 min of workload, 166 a minute; 0 of 498 admitted: at most 0.6 % per exposure (95 %); a minute at this rate bounds it at 1.8 %, and 1 % needs 299 exposures (1.8 min)"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if s := boundPerMinute(&models.Exposures{}, time.Minute); !strings.HasPrefix(s, "ci-bound: 0 exposures in 1.0 min of workload, 0 a minute") {
		t.Errorf("no exposures: %q", s)
	}
	if s := boundPerMinute(nil, time.Minute); s != "" {
		t.Errorf("nil exposures: %q", s)
	}
}
