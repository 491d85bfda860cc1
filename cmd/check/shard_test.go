package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bad --shard values exit 254 with the flag named, before anything is
// created; merge without shards or of a directory that is no shard too.
func TestCompareShardBadValuesCreateNothing(t *testing.T) {
	for in, want := range map[string]string{
		"0/3": "from 1 to 3", "4/3": "from 1 to 3", "x": `"x" is not I/N`, "1/0": "at least 1",
	} {
		store := filepath.Join(t.TempDir(), "s")
		code, _, stderr := runCLI(t, "compare", "--backends", "memory", "--seed", "1", "--shard", in, "--store", store)
		if code != 254 || !strings.Contains(stderr, "--shard") || !strings.Contains(stderr, want) {
			t.Errorf("--shard %s: exit %d, stderr %q; want 254 saying %q", in, code, stderr, want)
		}
		if _, err := os.Stat(store); err == nil {
			t.Errorf("--shard %s created %s", in, store)
		}
	}
	store := filepath.Join(t.TempDir(), "s")
	if code, _, stderr := runCLI(t, "compare", "--backends", "memory", "--shard", "1/2", "--store", store); code != 254 || !strings.Contains(stderr, "--shard needs --seed") {
		t.Errorf("--shard without --seed: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI(t, "compare", "merge"); code != 254 || !strings.Contains(stderr, "shard directories") {
		t.Errorf("merge without directories: exit %d, %q", code, stderr)
	}
	out := filepath.Join(t.TempDir(), "merged")
	if code, _, stderr := runCLI(t, "compare", "merge", "--out", out, t.TempDir()); code != 254 || !strings.Contains(stderr, "has no compare.json") {
		t.Errorf("merge of an empty directory: exit %d, %q", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused merge created %s", out)
	}
}
