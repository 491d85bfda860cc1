package main

import (
	"strings"
	"testing"
)

// image build --client is checked, every one of them, before the engine
// is asked anything: a malformed value, an unknown backend or a directory
// with no manifest exits 254 naming the value and the fix.
func TestImageBuildClientBadInput(t *testing.T) {
	for _, c := range []struct {
		arg, want string
	}{
		{"examples/clients/kazoo", `want BACKEND=DIR`},
		{"=examples/clients/kazoo", `want BACKEND=DIR`},
		{"zookeeper=", `want BACKEND=DIR`},
		{"nosuch=../../examples/clients/kazoo", `unknown backend "nosuch" (accepted: `},
		{"zookeeper=../../examples/nope", `no such directory`},
		{"zookeeper=../../examples", `no fencecheck-client.json in it`},
	} {
		// The good one first: a bad second value still stops everything.
		code, out, stderr := runCLI(t, "image", "build", "--client", "zookeeper=../../examples/clients/kazoo", "--client", c.arg)
		if code != 254 || !strings.Contains(stderr, "--client "+strings.TrimSpace(c.arg)) && !strings.Contains(stderr, c.arg) || !strings.Contains(stderr, c.want) || out != "" {
			t.Errorf("--client %s: exit %d, stdout %q, stderr %q; want 254 naming it and %q", c.arg, code, out, stderr, c.want)
		}
	}
}
