package scripttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// repoRoot is the checkout this test file is in.
func repoRoot(t *testing.T) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// scratch makes a git checkout in a temporary directory holding a copy of
// the named scripts and the given files, and returns its path.
func scratch(t *testing.T, scripts []string, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatalf("git is needed to make a scratch checkout: %v", err)
	}
	dir := t.TempDir()
	root := repoRoot(t)
	for _, s := range scripts {
		b, err := os.ReadFile(filepath.Join(root, s))
		if err != nil {
			t.Fatal(err)
		}
		files[s] = string(b)
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
	}
	return dir
}

// run runs script in dir with env added, and returns its exit code and
// its last 20 lines.
func run(t *testing.T, dir, script string, env ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(dir, script))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running %s: %v", script, err)
		}
		code = ee.ExitCode()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return code, strings.Join(lines, "\n")
}

// A checkout with no Go file: gofmt would read its standard input and
// pass; scripts/test fails and says why.
func TestEmptyGofmtListFailsTheRun(t *testing.T) {
	dir := scratch(t, []string{"scripts/test"}, map[string]string{
		"go.mod":    "module example.com/empty\n\ngo 1.26\n",
		"README.md": "no Go here\n",
	})
	code, tail := run(t, dir, "scripts/test", "FENCECHECK_TEST_OUTPUT="+t.TempDir())
	if code == 0 {
		t.Fatalf("scripts/test passed on a checkout with no Go file; its last lines:\n%s", tail)
	}
	if !strings.Contains(tail, "found no Go files") {
		t.Errorf("the last 20 lines do not name the cause (no Go files):\n%s", tail)
	}
}

// A git that cannot list the files (here: none on PATH) is an error that
// names git, not an empty list that passes.
func TestGitFailureFailsTheRun(t *testing.T) {
	dir := scratch(t, []string{"scripts/test"}, map[string]string{
		"go.mod":  "module example.com/one\n\ngo 1.26\n",
		"main.go": "package main\n\nfunc main() {}\n",
	})
	// A PATH with bash and the core tools but a git that always fails.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte("#!/bin/sh\necho 'fatal: detected dubious ownership' >&2\nexit 128\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	code, tail := run(t, dir, "scripts/test", "PATH="+bin+":"+os.Getenv("PATH"), "FENCECHECK_TEST_OUTPUT="+t.TempDir())
	if code == 0 {
		t.Fatalf("scripts/test passed with a failing git; its last lines:\n%s", tail)
	}
	if !strings.Contains(tail, "git ls-files failed") {
		t.Errorf("the last 20 lines do not name git:\n%s", tail)
	}
}

// .ci/run's first checks: a machine without what CI needs stops at once,
// each missing thing on a line naming what supplies it. Here the Docker
// CLI and Go are hidden from PATH.
func TestCIRunNamesWhatIsMissing(t *testing.T) {
	dir := scratch(t, []string{".ci/run"}, map[string]string{
		"go.mod": "module example.com/one\n\ngo 1.26.8\n",
	})
	bin := t.TempDir()
	// Only the tools the checks themselves use, none of docker or go.
	for _, tool := range []string{"bash", "awk", "sort", "head", "git", "date", "dirname", "test", "modprobe"} {
		if p, err := exec.LookPath(tool); err == nil {
			if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command(filepath.Join(bin, "bash"), filepath.Join(dir, ".ci/run"))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir()}
	b, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf(".ci/run passed with no docker and no go on PATH:\n%s", b)
	}
	s := string(b)
	for _, want := range []string{"MISSING  Go 1.26.8 or newer", "MISSING  the Docker CLI", "apt-get install docker.io", "CI cannot run here"} {
		if !strings.Contains(s, want) {
			t.Errorf(".ci/run's output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "installing") || strings.Contains(s, "packages ready") {
		t.Errorf(".ci/run went on past its checks:\n%s", s)
	}
}
