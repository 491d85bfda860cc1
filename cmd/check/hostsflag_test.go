package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --hosts is bad input, exit 254, before anything is touched: a file with
// a host missing its role (named, with the fix), --hosts beside
// --endpoints, and `cluster down --hosts` without the test's id.
func TestHostsFlagBadInput(t *testing.T) {
	dir := t.TempDir()
	known := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(known, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "hosts.yaml")
	body := "known_hosts: " + known + "\nuser: root\nhosts:\n  - {address: 10.0.0.11, role: server}\n  - {address: 10.0.0.20}\n"
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SSH_AUTH_SOCK", "/nonexistent/agent.sock") // no key: the agent would be asked
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--backend", "etcd", "--hosts", file, "--store", dir}, []string{"host 2 (10.0.0.20, line 5): role: missing: write role: server, storage or client"}},
		{[]string{"--backend", "etcd", "--hosts", file, "--endpoints", "http://a:2379", "--store", dir}, []string{"--endpoints", "cannot go with --hosts"}},
		{[]string{"cluster", "down", "--hosts", file}, []string{"--hosts needs --id"}},
	} {
		code, out, errOut := runCLI(t, c.args...)
		if code != 254 {
			t.Errorf("check %s: exit %d, want 254\n%s%s", strings.Join(c.args, " "), code, out, errOut)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(out+errOut, w) {
				t.Errorf("check %s: does not say %q:\n%s%s", strings.Join(c.args, " "), w, out, errOut)
			}
		}
	}
}
