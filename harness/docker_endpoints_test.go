package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/models"
)

// --endpoints against an etcd fencecheck did not start: one member run by
// hand, `docker run` of the node image's etcd on a network of the test's
// own, as a user's docker-compose cluster would be. fencecheck is given
// its client URL and that network, and must find the unfenced lock
// invalid and the fenced one valid under pause-holder, both runs on the
// one etcd (the lock keys are the same; an earlier run's locks are
// released or expire with their leases, and the resource is each run's
// own storage container). An endpoint that does not answer is bad input,
// named, and leaves nothing behind.
func TestDockerEtcdByEndpoints(t *testing.T) {
	bin := dockerOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli, err := engine.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	image, err := images.EnsureCoreImage(ctx, cli, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprintf("byaddr-%d", time.Now().UnixNano()%1e9)
	netName, etcdName := engine.NetworkName(id), engine.ContainerName(id, "etcd")
	handStartedEtcd(ctx, t, cli, image, id, netName, etcdName)

	run := func(t *testing.T, fencing string, endpoint string) (*RunResult, error) {
		cfg := dockerConfig(t, "etcd", fencing, "pause-holder")
		cfg.AgentBinary = bin
		cfg.Endpoints, cfg.EndpointsNetwork = []string{endpoint}, netName
		cfg.Given = map[string]bool{"endpoints": true, "endpoints-network": true}
		cfg.TimeLimit, cfg.StopOnViolation = 12*time.Second, true
		return runWith(quiet(), cfg, testWriter{t}, &runState{})
	}
	endpoint := "http://" + etcdName + ":2379"
	t.Run("pause-holder unfenced is invalid", func(t *testing.T) {
		out, err := run(t, "none", endpoint)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		wantDocker(t, out, models.Invalid)
		wantUsersService(t, out, endpoint, netName)
	})
	t.Run("pause-holder fenced is valid", func(t *testing.T) {
		out, err := run(t, "all", endpoint)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		wantDocker(t, out, models.Valid)
		wantUsersService(t, out, endpoint, netName)
		if a := out.Result.Agreement; a == nil || len(a.Members) != 1 || !strings.HasPrefix(a.Members[0].State, "HashKV ") {
			t.Errorf("agreement %+v: want the member's HashKV, asked by address", a)
		}
	})
	t.Run("an endpoint that does not answer is bad input", func(t *testing.T) {
		silent := "http://" + engine.ContainerName(id, "nobody") + ":2379"
		out, err := run(t, "all", silent)
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != "endpoints" || !strings.Contains(err.Error(), silent) {
			t.Fatalf("got %v, want a usage error naming --endpoints and %s", err, silent)
		}
		if out != nil && out.TestID != "" {
			if hint := leftoverHint(out.TestID, false); hint != "" {
				t.Errorf("the refused run left something: %s", hint)
			}
		}
	})
}

// handStartedEtcd runs one etcd member from image on a network of its own
// (both labelled with id, so `check cluster down --id` and the leftover
// sweep find them), waits until it takes connections, and removes both at
// the end of the test.
func handStartedEtcd(ctx context.Context, t *testing.T, cli *client.Client, image, id, netName, name string) {
	t.Helper()
	if _, err := cli.NetworkCreate(ctx, netName, network.CreateOptions{Driver: "bridge", Internal: true, Labels: engine.Labels(id)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cli.NetworkRemove(context.Background(), netName); err != nil {
			t.Errorf("removing network %s: %v", netName, err)
		}
	})
	url := "http://" + name + ":2379"
	init := true
	resp, err := cli.ContainerCreate(ctx, &container.Config{Image: image, Hostname: name, Labels: engine.Labels(id),
		Cmd: []string{"/usr/local/bin/etcd-3.6", "--name", "by-hand", "--data-dir", "/tmp/by-hand", "--listen-client-urls", "http://0.0.0.0:2379", "--advertise-client-urls", url,
			"--listen-peer-urls", "http://127.0.0.1:2380", "--initial-advertise-peer-urls", "http://127.0.0.1:2380", "--initial-cluster", "by-hand=http://127.0.0.1:2380"}},
		&container.HostConfig{NetworkMode: container.NetworkMode(netName), Init: &init}, nil, nil, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cli.ContainerRemove(context.Background(), resp.ID, container.RemoveOptions{Force: true}); err != nil {
			t.Errorf("removing %s: %v", name, err)
		}
	})
	if err := cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		ex, err := cli.ContainerExecCreate(ctx, resp.ID, container.ExecOptions{Cmd: []string{"bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/2379"}})
		if err == nil {
			err = cli.ContainerExecStart(ctx, ex.ID, container.ExecStartOptions{})
		}
		if err == nil {
			var in container.ExecInspect
			for in, err = cli.ContainerExecInspect(ctx, ex.ID); err == nil && in.Running; in, err = cli.ContainerExecInspect(ctx, ex.ID) {
				time.Sleep(50 * time.Millisecond)
			}
			if err == nil && in.ExitCode == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			logs, _ := cli.ContainerLogs(ctx, resp.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true, Tail: "20"})
			var b strings.Builder
			if logs != nil {
				buf := make([]byte, 4096)
				n, _ := logs.Read(buf)
				b.Write(buf[:n])
				logs.Close()
			}
			t.Fatalf("the hand-started etcd does not take connections after 30 s (%v): %s", err, b.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// wantUsersService: the run says its service was the user's, given by
// endpoints, and recorded what the server said it is.
func wantUsersService(t *testing.T, out *RunResult, endpoint, netName string) {
	t.Helper()
	if got := paramValue(out, "lock service"); !strings.HasPrefix(got, "yours, given by --endpoints") {
		t.Errorf("lock service %q: the run must say the service was the user's", got)
	}
	if got := paramValue(out, "endpoints"); got != endpoint {
		t.Errorf("endpoints %q, want %s", got, endpoint)
	}
	if got := paramValue(out, "endpoints-network"); got != netName {
		t.Errorf("endpoints-network %q, want %s", got, netName)
	}
	sv := out.Report.Servers
	if sv == nil || len(sv.Nodes) != 1 || sv.Nodes[0].Node != endpoint || !strings.HasPrefix(sv.Nodes[0].Version, "3.6.") {
		t.Errorf("servers %+v: want the endpoint's own answer, etcd 3.6.x", sv)
	} else {
		t.Logf("servers: %s (%s)", sv.Summary, sv.Nodes[0].Answer)
	}
}
