package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The rerun line and results.json's command are pasted into a shell: a
// real sh must read back every argument as it was given (a name with
// spaces, $ and quotes; a store path with spaces), and command_argv must
// be the same arguments as a list.
func TestRerunCommandIsShellQuoted(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("no sh on this machine: %v", err)
	}
	store := filepath.Join(t.TempDir(), "my runs $HOME 'x'")
	name := `it's a "$test" ; rm -rf ~`
	code, out, stderr := runCLI(t, "--backend", "memory", "--time-limit", "1s", "--lease-ttl", "200ms", "--store", store, "--name", name, "--seed", "5")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, stderr)
	}
	m := regexp.MustCompile(`(?m)^rerun: +(.*)$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no rerun line:\n%s", out)
	}
	dirs, _ := filepath.Glob(filepath.Join(store, "*", "*", "results.json"))
	if len(dirs) != 1 {
		t.Fatalf("results.json files %v, want one", dirs)
	}
	res := readResults(t, filepath.Dir(dirs[0]))
	if res.Command != m[1] {
		t.Errorf("results.json's command\n%s\nis not the rerun line\n%s", res.Command, m[1])
	}
	want := []string{"check", "--backend", "memory", "--lease-ttl", "200ms", "--name", name, "--store", store, "--time-limit", "1s", "--seed", "5"}
	if !slices.Equal(res.CommandArgv, want) {
		t.Errorf("command_argv %q, want %q", res.CommandArgv, want)
	}
	// printf in place of check prints each argument the shell passed.
	line := "printf '%s\\0' " + strings.TrimPrefix(res.Command, "check ")
	got, err := exec.Command(sh, "-c", line).Output()
	if err != nil {
		t.Fatalf("sh -c %s: %v", line, err)
	}
	if args := strings.Split(strings.TrimSuffix(string(got), "\x00"), "\x00"); !slices.Equal(args, want[1:]) {
		t.Errorf("sh read the command back as\n%q\nwant\n%q", args, want[1:])
	}
}
