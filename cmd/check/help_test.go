package main

import (
	"os"
	"path/filepath"
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

// check --help opens with the README's first commands, line for line: the
// README's first code block is the help's first example.
func TestHelpOpensWithTheReadmesExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "```sh\n")
	if start < 0 {
		t.Fatal("README.md has no ```sh block")
	}
	block := readme[start+len("```sh\n"):]
	block = block[:strings.Index(block, "```")]
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		want = append(want, strings.TrimSpace(l))
	}
	if len(want) < 2 || !strings.Contains(want[0], "go build") || !strings.HasPrefix(want[1], "bin/check --backend") {
		t.Fatalf("README.md's first commands are not the build and a run: %q", want)
	}
	if i := strings.Index(readme, "```sh"); strings.Count(readme[:i], "\n") > 30 {
		t.Errorf("README.md's first commands start on line %d: a newcomer should see them on the first screen", strings.Count(readme[:i], "\n")+1)
	}
	code, out, _ := runCLI(t, "--help")
	if code != 0 {
		t.Fatalf("check --help: exit %d", code)
	}
	lines := strings.Split(out, "\n")
	// The first line says what check is; the examples follow it at once.
	var got []string
	for _, l := range lines[1:] {
		if strings.TrimSpace(l) == "" {
			if len(got) > 0 {
				break
			}
			continue
		}
		got = append(got, strings.TrimSpace(l))
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("check --help opens with\n%s\nbut README.md's first commands are\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
