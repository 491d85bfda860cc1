package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/harness"
)

// --expect pins a matrix: a cell the matrix does not have is refused
// before anything is created; a verdict that differs exits 1 naming the
// cell; the comparison's own compare.expect, given back, passes.
func TestCompareExpect(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	args := []string{"compare", "--backends", "memory", "--faults", "pause-holder", "--fencing", "none", "--time-limit", "2s",
		"--clients", "3", "--lease-ttl", "300ms", "--nemesis-interval", "300ms", "--seed", "5"}

	for name, c := range map[string]struct{ text, says string }{
		"no such row":   {"etcd mutex fenced none × pause-holder: invalid\n", `no row "etcd mutex fenced none"`},
		"no such fault": {"memory lease fenced none × kill: invalid\n", `no fault "kill"`},
		"bad verdict":   {"memory lease fenced none × pause-holder: broken\n", `verdict "broken" is not one of`},
		"no cell":       {"memory lease fenced none: invalid\n", "names no cell"},
		"empty":         {"# nothing\n", "names no cell"},
	} {
		store := filepath.Join(dir, "store-"+strings.ReplaceAll(name, " ", "-"))
		code, _, stderr := runCLI(t, append(args, "--store", store, "--expect", write(name, c.text))...)
		if code != harness.ExitUsage || !strings.Contains(stderr, "--expect") || !strings.Contains(stderr, c.says) {
			t.Errorf("%s: exit %d, %q; want 254 saying %q", name, code, stderr, c.says)
		}
		if _, err := os.Stat(store); err == nil {
			t.Errorf("%s: the store was created before --expect was checked", name)
		}
	}
	if code, _, stderr := runCLI(t, append(args, "--expect", filepath.Join(dir, "absent"))...); code != harness.ExitUsage || !strings.Contains(stderr, "--expect") {
		t.Errorf("a missing file: exit %d, %q", code, stderr)
	}

	// The unfenced memory lease under pause-holder is invalid: expected
	// valid, compare exits 1 and names the cell.
	store := filepath.Join(dir, "run")
	code, out, stderr := runCLI(t, append(args, "--store", store, "--expect", write("wrong", "memory lease fenced none x pause-holder: valid\n"))...)
	if code != harness.ExitInvalid || !strings.Contains(out+stderr, "memory lease fenced none × pause-holder: expected valid, got invalid") {
		t.Fatalf("a verdict that moved: exit %d\n%s\n%s", code, out, stderr)
	}
	pinned, err := os.ReadFile(filepath.Join(store, "compare.expect"))
	if err != nil || !strings.Contains(string(pinned), "memory lease fenced none × pause-holder: invalid\n") {
		t.Fatalf("compare.expect: %v\n%s", err, pinned)
	}
	code, out, stderr = runCLI(t, append(args, "--store", filepath.Join(dir, "again"), "--expect", filepath.Join(store, "compare.expect"))...)
	if code != 0 {
		t.Errorf("its own compare.expect given back: exit %d\n%s\n%s", code, out, stderr)
	}
	// not-valid holds an invalid cell too.
	code, _, _ = runCLI(t, append(args, "--store", filepath.Join(dir, "nv-store"), "--expect", write("nv", "memory lease fenced none × pause-holder: not-valid\n"))...)
	if code != 0 {
		t.Errorf("not-valid against an invalid cell: exit %d", code)
	}
}
