package sshnodes

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// The wrapper a command runs in keeps every argument one word, whatever
// it holds, and adds the environment and the directory: run here by
// /bin/sh as the host's would (no cgroup, nothing recorded).
func TestUserScriptQuotesEverything(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a dir 'quoted' $x")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	h := &host{freezer: freezeSignal, testID: "t1"}
	script, err := h.userScript([]string{"sh", "-c", `printf '%s|' "$@" "$PWD" "$V"`, "sh", "a b", "it's", "$HOME", "", "`id`"},
		nodes.ExecOptions{WorkDir: dir, Env: []string{"V=x y $z"}}, false, "")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/bin/sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s\n%s", err, out, script)
	}
	if want := "a b|it's|$HOME||`id`|" + dir + "|x y $z|"; string(out) != want {
		t.Errorf("got  %q\nwant %q", out, want)
	}
	if _, err := h.userScript([]string{"true"}, nodes.ExecOptions{Env: []string{"NOEQUALS"}}, false, ""); err == nil {
		t.Error("an environment entry without = was taken")
	}
	if _, err := h.userScript(nil, nodes.ExecOptions{}, false, ""); err == nil {
		t.Error("an empty command was taken")
	}
}

func TestAsUser(t *testing.T) {
	for user, want := range map[string]string{
		"postgres":     "runuser -u postgres --",
		"postgres:adm": "runuser -u postgres -g adm --",
		"1000":         "setpriv --reuid=1000 --regid=0 --clear-groups",
		"1000:1000":    "setpriv --reuid=1000 --regid=1000 --clear-groups",
		"we'ird":       `runuser -u 'we'\''ird' --`,
	} {
		got, err := asUser(user)
		if err != nil || got != want {
			t.Errorf("asUser(%q) = %q, %v; want %q", user, got, err, want)
		}
	}
	for _, bad := range []string{":1000", "1000:adm"} {
		if _, err := asUser(bad); err == nil {
			t.Errorf("asUser(%q) was taken", bad)
		}
	}
}

// The partition's rules: the control machine's ACCEPT before any DROP,
// and the heal touches only the test's chain and its jump.
func TestPartitionScripts(t *testing.T) {
	s := dropScript("fencecheck-t1", "172.17.0.1", []string{"10.0.0.2", "10.0.0.3"})
	accept := strings.Index(s, "-I fencecheck-t1 1 -s 172.17.0.1 -j ACCEPT")
	jump := strings.Index(s, "-I INPUT 1 -j fencecheck-t1")
	drop := strings.Index(s, "-A fencecheck-t1 -s 10.0.0.2 -j DROP")
	if accept < 0 || jump < 0 || drop < 0 || !(accept < jump && jump < drop) {
		t.Errorf("drop script: want the ACCEPT, then the jump, then the DROPs:\n%s", s)
	}
	heal := healChainScript("fencecheck-t1")
	for _, line := range strings.Split(heal, "\n") {
		if strings.Contains(line, "iptables") && !strings.Contains(line, "fencecheck-t1") && !strings.Contains(line, "command -v") {
			t.Errorf("the heal touches something not the test's: %s", line)
		}
	}
	if strings.Contains(heal, "-F INPUT") || strings.Contains(heal, "-F\n") || strings.Contains(heal, "-t ") {
		t.Errorf("the heal flushes a chain or table not the test's:\n%s", heal)
	}
}

// Every script the driver sends parses as POSIX sh (dash here, as on
// Debian hosts), for each freezer.
func TestScriptsParse(t *testing.T) {
	for _, fz := range []struct{ kind, dir string }{
		{freezeCgroup2, "/sys/fs/cgroup/fencecheck-t1/n1"},
		{freezeCgroup1, "/sys/fs/cgroup/freezer/fencecheck-t1/n1"},
		{freezeSignal, ""},
	} {
		h := &host{testID: "t1", freezer: fz.kind, cgroup: fz.dir, Host: Host{Name: "n1"}}
		user, err := h.userScript([]string{"etcd", "--name", "n1"}, nodes.ExecOptions{User: "etcd", Env: []string{"A=1"}, WorkDir: "/var/lib"}, true, "/run/fencecheck/t1/started-x")
		if err != nil {
			t.Fatal(err)
		}
		scripts := map[string]string{
			"heal": healScript("t1", fz.kind, fz.dir), "freeze": h.freezeScript(true), "thaw": h.freezeScript(false),
			"paused": h.pausedScript(), "user": user,
			"probe": probeScript("t1", "n1", FreezerAuto), "probe signal": probeScript("t1", "n1", FreezerSignal),
			"watchdog": watchdogScript("t1", false, 8e9), "watchdog systemd": watchdogScript("t1", true, 8e9),
			"drop": dropScript("fencecheck-t1", "172.17.0.1", []string{"10.0.0.2"}), "heal chain": healChainScript("fencecheck-t1"),
		}
		for name, s := range scripts {
			if out, err := exec.Command("/bin/sh", "-n", "-c", s).CombinedOutput(); err != nil {
				t.Errorf("%s (%s): %v: %s\n%s", name, fz.kind, err, out, s)
			}
		}
	}
}

// The partition's scripts against a real iptables, in a network namespace
// of the test's own (nothing of this machine's rules is touched): the
// jump first in INPUT, the control machine's ACCEPT first in the chain,
// a second drop idempotent, and a heal that leaves the host's own rules
// exactly as they were.
func TestPartitionRulesInANetworkNamespace(t *testing.T) {
	if _, err := exec.LookPath("iptables"); err != nil {
		dockertest.Unavailable(t, "iptables", err)
	}
	if out, err := exec.Command("unshare", "-n", "true").CombinedOutput(); err != nil {
		dockertest.Unavailable(t, "a network namespace (unshare -n, as root)", fmt.Errorf("%v: %s", err, out))
	}
	const chain = "fencecheck-t1"
	script := "iptables -w -A INPUT -s 10.9.9.9 -j ACCEPT && iptables -w -S > /tmp/before.$$ || exit 9\n" +
		dropScript(chain, "172.17.0.1", []string{"10.0.0.2", "10.0.0.3"}) + dropScript(chain, "172.17.0.1", []string{"10.0.0.2"}) +
		"echo --- cut; iptables -w -S\n" + healChainScript(chain) + healChainScript(chain) +
		"echo --- healed; iptables -w -S | diff /tmp/before.$$ - && echo same; rm -f /tmp/before.$$\n"
	out, err := exec.Command("unshare", "-n", "/bin/sh", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	cut, healed, _ := strings.Cut(strings.SplitN(string(out), "--- cut\n", 2)[1], "--- healed\n")
	want := []string{"-A INPUT -j " + chain, "-A INPUT -s 10.9.9.9/32 -j ACCEPT",
		"-A " + chain + " -s 172.17.0.1/32 -j ACCEPT", "-A " + chain + " -s 10.0.0.2/32 -j DROP", "-A " + chain + " -s 10.0.0.3/32 -j DROP"}
	var got []string
	for _, l := range strings.Split(cut, "\n") {
		if strings.HasPrefix(l, "-A ") {
			got = append(got, l)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the rules during the partition:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.TrimSpace(healed) != "same" {
		t.Errorf("the rules after the heal differ from before:\n%s", healed)
	}
}

// A directory that is not there is the driver's error, named, not an
// exit code the command seems to have given.
func TestUserScriptMissingDirectory(t *testing.T) {
	h := &host{freezer: freezeSignal, testID: "t1"}
	script, err := h.userScript([]string{"true"}, nodes.ExecOptions{WorkDir: "/nonexistent"}, false, "")
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("ran: %v", err)
	}
	werr := wrapperError("n1", []string{"true"}, nodes.ExecResult{ExitCode: exit.ExitCode(), Stderr: stderr.String()})
	if werr == nil || werr.Error() != "exec `true` in n1: no directory /nonexistent" {
		t.Errorf("error %v (exit %d, stderr %q)", werr, exit.ExitCode(), stderr.String())
	}
}
