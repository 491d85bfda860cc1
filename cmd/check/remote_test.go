package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/sshtransport"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.RemoveBinaries()
	os.Exit(code)
}

// The check binary against this machine's engine reached as a remote one,
// DOCKER_HOST=ssh://root@127.0.0.1:PORT through a private sshd: a short
// etcd run without fencing under pause-holder is invalid, and a second
// run, interrupted the way a terminal's Ctrl-C is (SIGINT to the whole
// process group) while a holder is frozen, heals, keeps its history and
// removes every container and network — all through the same transport.
func TestDockerRemoteEngineOverSSH(t *testing.T) {
	local := dockertest.Engine(t, engine.Connect)
	bin := dockertest.CheckBinary(t)
	sshd := dockertest.SSHEngine(t)
	store := t.TempDir()
	env := append(os.Environ(), "DOCKER_HOST="+sshd.Host, sshtransport.OptsEnv+"="+sshd.Opts, "FENCECHECK_BINARY="+bin)

	t.Run("invalid", func(t *testing.T) {
		before := sshd.Logins()
		began := time.Now()
		r := startCheck(t, bin, env, "--backend", "etcd", "--fencing", "none", "--nemesis", "pause-holder",
			"--time-limit", "8s", "--store", store, "--name", "remote-invalid")
		code := r.wait(t, 3*time.Minute)
		t.Logf("run through %s: exit %d in %s, %d ssh connections", sshd.Host, code, time.Since(began).Round(100*time.Millisecond), sshd.Logins()-before)
		if code != 1 {
			t.Fatalf("exit %d, want 1 (invalid)\n%s", code, r.output())
		}
		if !strings.Contains(r.output(), "INVALID: ") {
			t.Errorf("no INVALID line:\n%s", r.output())
		}
		// Every exec's attached stream is an ssh connection of its own
		// (requests share kept-alive ones).
		if n := sshd.Logins() - before; n < 5 {
			t.Errorf("only %d ssh logins: the run did not go through the ssh engine", n)
		}
		wantVerdict(t, runDir(t, store, "remote-invalid"), "invalid")
		wantGone(t, local, r.testID(t))
	})

	t.Run("interrupted", func(t *testing.T) {
		r := startCheck(t, bin, env, "--backend", "etcd", "--fencing", "none", "--nemesis", "pause-holder",
			"--time-limit", "60s", "--nemesis-interval", "1s", "--store", store, "--name", "remote-interrupted")
		if !r.waitFor("nemesis: pause-holder", 2*time.Minute) {
			r.cmd.Process.Kill()
			r.wait(t, time.Minute)
			t.Fatalf("no holder was frozen:\n%s", r.output())
		}
		time.Sleep(300 * time.Millisecond) // frozen for 2 × TTL: still frozen
		interrupted := time.Now()
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGINT) // as a terminal's Ctrl-C: the whole group
		code := r.wait(t, 2*time.Minute)
		t.Logf("interrupted: exit %d after %s", code, time.Since(interrupted).Round(100*time.Millisecond))
		if code != 1 && code != 2 {
			t.Fatalf("exit %d, want 1 (invalid) or 2 (unknown)\n%s", code, r.output())
		}
		if !strings.Contains(r.output(), "nemesis: healed pause-holder") {
			t.Errorf("the frozen holder was not healed:\n%s", r.output())
		}
		dir := runDir(t, store, "remote-interrupted")
		if fi, err := os.Stat(filepath.Join(dir, "history.jsonl")); err != nil || fi.Size() == 0 {
			t.Errorf("the history was not kept: %v", err)
		}
		wantVerdict(t, dir, "invalid", "unknown")
		wantGone(t, local, r.testID(t))
	})
}

// checkRun is one check process, its output gathered as it comes.
type checkRun struct {
	cmd  *exec.Cmd
	done chan error

	mu    sync.Mutex
	out   strings.Builder
	lines chan string
}

func startCheck(t *testing.T, bin string, env []string, args ...string) *checkRun {
	t.Helper()
	r := &checkRun{done: make(chan error, 1), lines: make(chan string, 1024)}
	r.cmd = exec.Command(bin, args...)
	r.cmd.Env = env
	r.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a group of its own, as a terminal's job
	pr, pw := io.Pipe()
	r.cmd.Stdout, r.cmd.Stderr = pw, pw
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			r.mu.Lock()
			r.out.WriteString(sc.Text() + "\n")
			r.mu.Unlock()
			select {
			case r.lines <- sc.Text():
			default:
			}
		}
		close(r.lines)
	}()
	go func() {
		err := r.cmd.Wait()
		pw.Close()
		r.done <- err
	}()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Kill()
		}
	})
	return r
}

func (r *checkRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitFor waits for a line of output that contains s.
func (r *checkRun) waitFor(s string, limit time.Duration) bool {
	timeout := time.After(limit)
	for {
		select {
		case l, ok := <-r.lines:
			if !ok {
				return false
			}
			if strings.Contains(l, s) {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// wait returns the exit code, killing the process past limit.
func (r *checkRun) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	go func() {
		for range r.lines {
		}
	}()
	select {
	case err := <-r.done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(limit):
		syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.done
		t.Fatalf("check did not end within %s:\n%s", limit, r.output())
		return -1
	}
}

var clusterLine = regexp.MustCompile(`cluster (\S+): \d+ server nodes`)

func (r *checkRun) testID(t *testing.T) string {
	t.Helper()
	m := clusterLine.FindStringSubmatch(r.output())
	if m == nil {
		t.Fatalf("no cluster line in the output:\n%s", r.output())
	}
	return m[1]
}

// runDir is the one run directory of test name in store.
func runDir(t *testing.T, store, name string) string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(store, name, "2*"))
	if len(dirs) != 1 {
		t.Fatalf("want one run directory under %s/%s, have %v", store, name, dirs)
	}
	return dirs[0]
}

func wantVerdict(t *testing.T, dir string, want ...string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Verdict string }
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if res.Verdict == w {
			return
		}
	}
	t.Errorf("results.json: verdict %q, want one of %v", res.Verdict, want)
}

// wantGone asks the local engine (the same one, not through ssh) for what
// the test left behind, and removes it if anything is.
func wantGone(t *testing.T, cli *client.Client, id string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	left, err := engine.List(ctx, cli, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range left {
		t.Errorf("left behind by %s: %s", id, l)
	}
	if len(left) > 0 {
		engine.DownAll(ctx, cli, id)
	}
}
