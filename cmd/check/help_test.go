package main

import (
	"strings"
	"testing"
)

// check help of a command that does not exist is bad input, not the main
// help with exit 0; of one that exists it is that command's help.
func TestHelpRefusesUnknownCommands(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "nonsense"}, `help: check has no command "nonsense" (commands: `},
		{[]string{"help", "cluster", "nonsense"}, `help: check cluster has no command "nonsense" (commands: down, status and up)`},
		{[]string{"cluster", "nonsense"}, `check: cluster: no command "nonsense" (commands: down, status and up)`},
		{[]string{"image", "status"}, `check: image: no command "status" (commands: build and server)`},
	} {
		code, out, stderr := runCLI(t, c.args...)
		if code != 254 || !strings.Contains(stderr, c.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 254 and %q", c.args, code, out, stderr, c.want)
		}
	}
	code, out, _ := runCLI(t, "help", "cluster", "up")
	if code != 0 || !strings.Contains(out, "check cluster up [flags]") {
		t.Errorf("help cluster up: exit %d\n%s", code, out)
	}
}

// An unknown flag points to the help of the command it was given to.
func TestUnknownFlagPointsToItsCommandsHelp(t *testing.T) {
	for args, want := range map[string]string{
		"analyze --bogus":    "(run check analyze --help for every flag",
		"cluster up --bogus": "(run check cluster up --help for every flag",
		"--bogus":            "(run check --help for every flag",
	} {
		code, _, stderr := runCLI(t, strings.Fields(args)...)
		if code != 254 || !strings.Contains(stderr, "unknown flag: --bogus") || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, %q; want 254 and %q", args, code, stderr, want)
		}
	}
}

// Each flag's default is said once.
func TestHelpSaysEachDefaultOnce(t *testing.T) {
	for _, cmd := range [][]string{{"--help"}, {"analyze", "--help"}, {"report", "--help"}} {
		_, out, _ := runCLI(t, cmd...)
		for _, line := range strings.Split(out, "\n") {
			if strings.Count(line, "default") > 1 {
				t.Errorf("check %s: a default said twice: %s", strings.Join(cmd, " "), strings.TrimSpace(line))
			}
		}
	}
}
