package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// client-test refuses a bad --store or a backend's flag given to the
// wrong backend with exit 254 and the fix, before any container is made.
func TestClientTestFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "exchange.log"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	kazoo := []string{"client-test", "--client", "../../examples/clients/kazoo", "--backend", "zookeeper"}
	clientGo := []string{"client-test", "--client", "../../examples/clients/client-go", "--backend", "kubernetes"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(kazoo, "--apiservers", "3"), "--apiservers"},
		{append(kazoo, "--apiservers", "3"), "kubernetes"},
		{append(clientGo, "--apiservers", "2"), "accepted: 1, 3"},
		{append(kazoo, "--store", file), "is a file: name a directory that does not exist yet"},
		{append(kazoo, "--store", full), "already holds 1 entry: name a new directory"},
		{append(kazoo, "--store", ""), "--store: name the directory"},
	} {
		code, out, stderr := runCLI(t, c.args...)
		if code != 254 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 254 and %q", c.args[5:], code, out, stderr, c.want)
		}
	}
	if b, err := os.ReadFile(filepath.Join(full, "exchange.log")); err != nil || string(b) != "old" {
		t.Errorf("a refused --store was written to: %q %v", b, err)
	}
	// The help names both flags.
	_, out, _ := runCLI(t, "client-test", "--help")
	for _, flag := range []string{"--store", "--apiservers"} {
		if !strings.Contains(out, flag) {
			t.Errorf("client-test --help does not name %s:\n%s", flag, out)
		}
	}
}
