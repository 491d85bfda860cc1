package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/agent"
	"github.com/fencecheck/fencecheck/lockclient"
)

// Its exit codes are check's.
func TestExitCodesAreChecks(t *testing.T) {
	if exitUsage != harness.ExitUsage || exitFailed != harness.ExitFailed {
		t.Errorf("exit codes %d and %d, check's are %d and %d", exitUsage, exitFailed, harness.ExitUsage, harness.ExitFailed)
	}
}

// A command line that is not `agent [--spec JSON]` is a usage error that
// shows the usage.
func TestCommandLine(t *testing.T) {
	for _, args := range [][]string{nil, {"run"}, {"agent", "x"}, {"agent", "--nodes", "3"}} {
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "usage: check-kubernetes agent [--spec JSON]") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr.String())
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"agent", "--help"}, strings.NewReader(""), &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "docs/client-protocol.md") {
		t.Errorf("--help: exit %d, %q", code, stdout.String())
	}
}

// serve runs the agent behind pipes and does the harness's side of the
// handshake (agent.NewRemote) with init.
func serve(t *testing.T, args []string, init lockclient.Init) error {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(args, inR, outW, io.Discard)
		outW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	init.Protocol = lockclient.Version
	r, err := agent.NewRemote(ctx, inW, outR, func() error { inW.Close(); return nil }, init)
	if err == nil {
		r.Close()
	}
	inW.Close()
	<-done
	return err
}

// The agent speaks the protocol as check agent does: a spec it cannot
// open is refused at init, with the reason, and nothing else is tried.
func TestAgentRefusesWhatItCannotOpen(t *testing.T) {
	for want, tc := range map[string]struct {
		args []string
		init lockclient.Init
	}{
		"check agent runs the others": {[]string{"agent"}, lockclient.Init{Builtin: []byte(`{"backend":"etcd","storage":"fenced","fencing":"all","storage_url":"http://storage:7001"}`)}},
		"service_secret":              {[]string{"agent"}, lockclient.Init{Builtin: []byte(`{"backend":"kubernetes","storage":"fenced","fencing":"all","storage_url":"http://storage:7001","endpoints":["https://n4:6443"]}`)}},
		"needs an API server's URL":   {[]string{"agent", "--spec", `{"backend":"kubernetes","storage":"fenced","fencing":"all","storage_url":"http://storage:7001"}`}, lockclient.Init{}},
		"unknown fencing mode":        {[]string{"agent"}, lockclient.Init{Builtin: []byte(`{"backend":"kubernetes","storage":"postgres","fencing":"sometimes"}`)}},
	} {
		err := serve(t, tc.args, tc.init)
		var he *agent.HandshakeError
		if !errors.As(err, &he) || !strings.Contains(he.Refused, want) {
			t.Errorf("want a refusal saying %q, got %v", want, err)
		}
	}
}

// Every shared storage a run can write to is linked in: each package that
// registers one (registry.RegisterStorage) is among the program's
// dependencies, so a kubernetes client never finds its storage missing.
func TestAgentLinksEverySharedStorage(t *testing.T) {
	root := moduleRoot(t)
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{.Dir}} {{join .GoFiles \",\"}}", root+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var registering []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || strings.HasSuffix(f[0], "/backends/registry") {
			continue
		}
		for _, name := range strings.Split(f[2], ",") {
			b, err := os.ReadFile(filepath.Join(f[1], name))
			if err == nil && bytes.Contains(b, []byte("registry.RegisterStorage(")) {
				registering = append(registering, f[0])
				break
			}
		}
	}
	if len(registering) == 0 {
		t.Fatal("found no package that registers a shared storage")
	}
	t.Logf("packages that register a shared storage: %v", registering)
	deps := goListDeps(t, root, "./cmd/check-kubernetes")
	for _, pkg := range registering {
		if !slices.Contains(deps, pkg) {
			t.Errorf("%s registers a shared storage, and check-kubernetes does not link it", pkg)
		}
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func goListDeps(t *testing.T, dir, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	return strings.Fields(string(out))
}
