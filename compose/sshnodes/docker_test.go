package sshnodes

// Docker tests: the driver against real sshd's in containers on this
// machine (sshhost_test.go). Whether they run is internal/dockertest's
// rule: skipped under -short and without a Docker engine, except under
// CI=true, where they run or fail.

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// rootSh runs script as root on node's host outside the test's cgroup (a
// control command: it works while the node is paused) and returns its
// stdout, failing the test on a non-zero exit.
func rootSh(t *testing.T, hs *Hosts, node, script string) string {
	t.Helper()
	h, err := hs.host(node)
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.runRoot(context.Background(), script, nil)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s: %q: %v exit %d: %s", node, script, err, res.ExitCode, res.Stderr)
	}
	return res.Stdout
}

// reaches reports whether from can open a TCP connection to to's sshd
// within 3 s.
func reaches(t *testing.T, hs *Hosts, from, toIP string) bool {
	t.Helper()
	res, err := hs.Exec(context.Background(), from, []string{"timeout", "3", "bash", "-c", "exec 3<>/dev/tcp/" + toIP + "/22 && head -c 4 <&3"})
	if err != nil {
		t.Fatal(err)
	}
	return res.ExitCode == 0 && res.Stdout == "SSH-"
}

func TestDockerSSHHosts(t *testing.T) {
	f := startHosts(t, []testHost{
		{Role: nodes.RoleServer},
		{Role: nodes.RoleServer, User: "fc"}, // through sudo -n
		{Role: nodes.RoleClient, Freezer: FreezerSignal},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	hs, err := Open(ctx, f.inv, f.id, Options{Watchdog: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Open of 3 hosts: %s", time.Since(start).Round(time.Millisecond))
	defer func() {
		if err := hs.Down(ctx); err != nil {
			t.Errorf("Down: %v", err)
		}
	}()
	for _, n := range []string{"n1", "n2", "c1"} {
		h, _ := hs.host(n)
		t.Logf("%s: root login %v, freezer %s %s, systemd %v, control %s", n, h.root, h.freezer, h.cgroup, h.systemd, h.control)
		if h.control != f.gateway {
			t.Errorf("%s sees the control machine at %s, want the network's gateway %s", n, h.control, f.gateway)
		}
	}
	if arch, err := hs.Arch(ctx); err != nil || arch == "" {
		t.Errorf("Arch: %q %v", arch, err)
	}

	t.Run("exec, stream and copy", func(t *testing.T) {
		for _, n := range []string{"n1", "n2"} {
			res, err := hs.ExecWith(ctx, n, []string{"sh", "-c", `pwd; id -un; echo "$A"; cat; echo oops >&2; exit 7`},
				nodes.ExecOptions{Env: []string{"A=it's $HOME"}, WorkDir: "/tmp", Stdin: strings.NewReader("from stdin\n")})
			if err != nil {
				t.Fatal(err)
			}
			if want := "/tmp\nroot\nit's $HOME\nfrom stdin\n"; res.Stdout != want || res.Stderr != "oops\n" || res.ExitCode != 7 {
				t.Errorf("%s: ExecWith gave %+v, want stdout %q, stderr oops, exit 7", n, res, want)
			}
			res, err = hs.ExecWith(ctx, n, []string{"id", "-un"}, nodes.ExecOptions{User: "nobody"})
			if err != nil || res.Stdout != "nobody\n" {
				t.Errorf("%s: as nobody: %+v %v", n, res, err)
			}
			if _, err := hs.ExecWith(ctx, n, []string{"true"}, nodes.ExecOptions{WorkDir: "/nonexistent"}); err == nil ||
				!strings.Contains(err.Error(), "no directory /nonexistent") {
				t.Errorf("%s: a missing directory: %v", n, err)
			}
		}
		content := make([]byte, 1<<20)
		rand.Read(content)
		if err := hs.CopyTo(ctx, "n2", "/tmp/blob", content, 0o640); err != nil {
			t.Fatal(err)
		}
		got, err := hs.CopyFrom(ctx, "n2", "/tmp/blob")
		if err != nil || !bytes.Equal(got, content) {
			t.Errorf("CopyFrom of 1 MiB: %d bytes, equal %v, %v", len(got), bytes.Equal(got, content), err)
		}
		if mode := rootSh(t, hs, "n2", "stat -c %a /tmp/blob"); mode != "640\n" {
			t.Errorf("mode %q, want 640", mode)
		}
		if _, err := hs.CopyFrom(ctx, "n2", "/tmp/none"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("CopyFrom of a missing file: %v, want fs.ErrNotExist", err)
		}
		if err := hs.CopyTo(ctx, "n2", "/nonexistent/x", []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), "directory /nonexistent does not exist") {
			t.Errorf("CopyTo into a missing directory: %v", err)
		}
		dir := t.TempDir()
		if err := hs.CollectLogsExcept(ctx, dir, map[string][]string{"n2": {"/tmp/blob", "/var/log/none"}}, map[string]bool{"c1": true}); err != nil {
			t.Errorf("CollectLogsExcept: %v", err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "n2", "tmp", "blob")); err != nil || !bytes.Equal(b, content) {
			t.Errorf("collected blob: %d bytes, %v", len(b), err)
		}
		if _, err := os.Stat(filepath.Join(dir, "c1")); err == nil {
			t.Error("c1 was skipped, yet collected")
		}

		s, err := hs.ExecStream(ctx, "c1", []string{"sh", "-c", `while read -r l; do echo "got $l"; done; echo done >&2; exit 3`})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(s.Stdin, "a\nb\n")
		s.Stdin.Close()
		out, _ := io.ReadAll(s.Stdout)
		errOut, _ := io.ReadAll(s.Stderr)
		code, err := s.Wait()
		if string(out) != "got a\ngot b\n" || string(errOut) != "done\n" || code != 3 || err != nil {
			t.Errorf("stream: out %q err %q code %d %v", out, errOut, code, err)
		}
	})

	t.Run("freeze and thaw", func(t *testing.T) {
		for _, n := range []string{"n1", "c1"} {
			freezer, _ := hs.Freezer(n)
			h, _ := hs.host(n)
			pid, err := hs.ExecDetached(ctx, n, []string{"sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > /tmp/tick; sleep 0.05; done"}, nodes.ExecOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tick := func() int {
				v, _ := strconv.Atoi(strings.TrimSpace(rootSh(t, hs, n, "cat /tmp/tick")))
				return v
			}
			time.Sleep(300 * time.Millisecond)
			if err := hs.Pause(ctx, n); err != nil {
				t.Fatalf("%s (%s): Pause: %v", n, freezer, err)
			}
			if p, err := hs.Paused(ctx, n); !p || err != nil {
				t.Errorf("%s (%s): Paused after Pause: %v %v", n, freezer, p, err)
			}
			state := rootSh(t, hs, n, "grep State: /proc/"+pid+"/status")
			switch freezer {
			case freezeSignal:
				if !strings.Contains(state, "T (stopped)") {
					t.Errorf("%s: SIGSTOP'd process: %s", n, state)
				}
			case freezeCgroup2:
				if ev := rootSh(t, hs, n, "cat "+h.cgroup+"/cgroup.events"); !strings.Contains(ev, "frozen 1") {
					t.Errorf("%s: cgroup.events %q", n, ev)
				}
			case freezeCgroup1:
				if st := rootSh(t, hs, n, "cat "+h.cgroup+"/freezer.state"); st != "FROZEN\n" {
					t.Errorf("%s: freezer.state %q", n, st)
				}
			}
			t.Logf("%s (%s): the ticker while paused: %s", n, freezer, strings.TrimSpace(state))
			before := tick()
			time.Sleep(time.Second)
			if after := tick(); after != before {
				t.Errorf("%s (%s): the ticker went on while paused: %d then %d", n, freezer, before, after)
			}
			if _, err := hs.Exec(ctx, n, []string{"true"}); err == nil || !strings.Contains(err.Error(), "paused") {
				t.Errorf("%s: Exec while paused: %v", n, err)
			}
			if err := hs.Unpause(ctx, n); err != nil {
				t.Fatal(err)
			}
			if p, err := hs.Paused(ctx, n); p || err != nil {
				t.Errorf("%s: Paused after Unpause: %v %v", n, p, err)
			}
			before = tick()
			time.Sleep(500 * time.Millisecond)
			if after := tick(); after <= before {
				t.Errorf("%s (%s): the ticker did not go on after Unpause: %d then %d", n, freezer, before, after)
			}
		}
	})

	t.Run("partition keeps the control machine", func(t *testing.T) {
		if !reaches(t, hs, "n2", f.ip["n1"]) {
			t.Fatal("n2 cannot reach n1 before the partition")
		}
		rulesBefore := rootSh(t, hs, "n1", "iptables -w -S")
		if err := hs.DropFrom(ctx, "n1", "n2"); err != nil {
			t.Fatal(err)
		}
		if reaches(t, hs, "n2", f.ip["n1"]) {
			t.Error("n2 reaches n1 through the partition")
		}
		if !reaches(t, hs, "c1", f.ip["n1"]) {
			t.Error("c1, not partitioned, cannot reach n1")
		}
		chain := ChainName(f.id)
		rules := rootSh(t, hs, "n1", "iptables -w -S "+chain)
		lines := strings.Split(strings.TrimSpace(rules), "\n")
		if len(lines) != 3 || lines[1] != "-A "+chain+" -s "+f.gateway+"/32 -j ACCEPT" || lines[2] != "-A "+chain+" -s "+f.ip["n2"]+"/32 -j DROP" {
			t.Errorf("the chain:\n%s\nwant the control machine's ACCEPT first, then n2's DROP", rules)
		}
		// The control machine still gets in, on the open connection and a
		// fresh one.
		if res, err := hs.Exec(ctx, "n1", []string{"echo", "in"}); err != nil || res.Stdout != "in\n" {
			t.Errorf("Exec in n1 during the partition: %+v %v", res, err)
		}
		if err := CheckReachable(ctx, f.inv); err != nil {
			t.Errorf("a fresh login during the partition: %v", err)
		}
		if err := hs.HealPartition(ctx, "n1"); err != nil {
			t.Fatal(err)
		}
		if !reaches(t, hs, "n2", f.ip["n1"]) {
			t.Error("n2 cannot reach n1 after the heal")
		}
		if after := rootSh(t, hs, "n1", "iptables -w -S"); after != rulesBefore {
			t.Errorf("the rules after the heal:\n%s\nbefore:\n%s", after, rulesBefore)
		}
		if err := hs.HealPartition(ctx, "n1"); err != nil {
			t.Errorf("a second heal: %v", err)
		}
	})

	t.Run("down leaves nothing", func(t *testing.T) {
		pid, err := hs.ExecDetached(ctx, "n1", []string{"sleep", "1000"}, nodes.ExecOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := hs.DropFrom(ctx, "n1", "n2"); err != nil {
			t.Fatal(err)
		}
		if err := hs.Pause(ctx, "c1"); err != nil {
			t.Fatal(err)
		}
		if err := hs.Down(ctx); err != nil {
			t.Fatal(err)
		}
		if err := hs.Down(ctx); err != nil {
			t.Errorf("a second Down: %v", err)
		}
		checkHealed(t, f, "n1", pid)
		checkHealed(t, f, "c1", "")
	})
}

// checkHealed logs in to node afresh and fails the test if anything of
// the test is left there: its directory, its cgroup, its chain, the
// process pid (if not ""), a stopped process.
func checkHealed(t *testing.T, f *fixture, node, pid string) {
	t.Helper()
	if left := leftOn(t, f, node, pid); left != "" {
		t.Errorf("%s after the heal: left %s", node, left)
	}
}

// leftOn logs in to node afresh and says what of the test is there ("":
// nothing).
func leftOn(t *testing.T, f *fixture, node, pid string) string {
	t.Helper()
	hostEntry, _ := f.inv.Host(node)
	c, err := dial(context.Background(), f.inv, hostEntry)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := &host{Host: hostEntry, client: c, root: hostEntry.User == "root"}
	script := `left=""
[ -e /run/fencecheck/` + f.id + ` ] && left="$left dir"
for d in /sys/fs/cgroup/fencecheck-` + f.id + ` /sys/fs/cgroup/unified/fencecheck-` + f.id + ` /sys/fs/cgroup/freezer/fencecheck-` + f.id + `; do [ -e $d ] && left="$left cgroup:$d"; done
iptables -w -S | grep -q ` + ChainName(f.id) + ` && left="$left chain"
for s in /proc/[0-9]*/status; do grep -q 'State:.*T (stopped)' $s 2>/dev/null && left="$left stopped:$s"; done
` + func() string {
		if pid == "" {
			return ""
		}
		return `[ -e /proc/` + pid + ` ] && left="$left process:` + pid + `"` + "\n"
	}() + `echo "left:$left"`
	res, err := h.runRoot(context.Background(), script, nil)
	if err != nil {
		t.Fatal(err)
	}
	left, ok := strings.CutPrefix(strings.TrimSpace(res.Stdout), "left:")
	if !ok {
		t.Fatalf("%s: the check printed %q %q", node, res.Stdout, res.Stderr)
	}
	return strings.TrimSpace(left)
}

// The harness is SIGKILLed mid-fault: its connections drop, nothing of
// Down runs. The watchdog heals each host on its own.
func TestDockerSSHWatchdog(t *testing.T) {
	f := startHosts(t, []testHost{{Role: nodes.RoleServer}, {Role: nodes.RoleServer}, {Role: nodes.RoleClient, Freezer: FreezerSignal}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const limit = 8 * time.Second
	hs, err := Open(ctx, f.inv, f.id, Options{Watchdog: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	// The hour's watchdog is replaced by one of 8 s: the old one is gone.
	firstWatchdog := strings.TrimSpace(rootSh(t, hs, "n2", "cat /run/fencecheck/"+f.id+"/watchdog.pid"))
	if err := hs.ResetWatchdog(ctx, limit); err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	if left := rootSh(t, hs, "n2", "[ -e /proc/"+firstWatchdog+" ] && echo left || true"); left != "" {
		t.Errorf("the first watchdog (pid %s) is still there after ResetWatchdog", firstWatchdog)
	}
	server, err := hs.ExecDetached(ctx, "n1", []string{"sleep", "1000"}, nodes.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	agent, err := hs.ExecDetached(ctx, "c1", []string{"sleep", "1000"}, nodes.ExecOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hs.ExecStream(ctx, "c1", []string{"cat"}); err != nil {
		t.Fatal(err)
	}
	if err := hs.DropFrom(ctx, "n1", "n2"); err != nil {
		t.Fatal(err)
	}
	if err := hs.Pause(ctx, "n1"); err != nil {
		t.Fatal(err)
	}
	if err := hs.Pause(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if reaches(t, hs, "n2", f.ip["n1"]) {
		t.Fatal("n2 reaches n1 through the partition")
	}
	// The harness dies: its connections drop; nothing is healed.
	hs.closeAll()
	t.Logf("abandoned %s after the watchdog was armed; it fires %s after that", time.Since(opened).Round(time.Millisecond), limit)
	if left := leftOn(t, f, "n1", server); !strings.Contains(left, "dir") || !strings.Contains(left, "chain") || !strings.Contains(left, "process") {
		t.Errorf("n1 before the watchdog fired: left %q, want the directory, the chain and the server", left)
	}
	// `check cluster down --id` reaches c1 first, from a process of its
	// own: c1 is healed at once, its watchdog cancelled.
	only := *f.inv
	c1, _ := f.inv.Host("c1")
	only.Hosts = []Host{c1}
	if err := DownByID(ctx, &only, f.id); err != nil {
		t.Fatalf("DownByID: %v", err)
	}
	checkHealed(t, f, "c1", agent)
	if err := DownByID(ctx, &only, f.id); err != nil {
		t.Errorf("a second DownByID: %v", err)
	}
	time.Sleep(time.Until(opened.Add(limit)))
	// The heal takes a moment after the timer: look for up to 20 s.
	deadline := time.Now().Add(20 * time.Second)
	for _, c := range []struct{ node, pid string }{{"n1", server}, {"n2", ""}} {
		for {
			left := leftOn(t, f, c.node, c.pid)
			if left == "" {
				t.Logf("%s healed by its watchdog %s after it was armed", c.node, time.Since(opened).Round(100*time.Millisecond))
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("%s %s after the watchdog was armed (limit %s): left %s", c.node, time.Since(opened).Round(time.Second), limit, left)
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
}
