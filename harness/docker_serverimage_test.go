package harness

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/models"
)

// --server-image: etcd run from an image laid out as the official one,
// with nothing in it but the etcd binary (no shell, no iptables, no tc).
// Every fault must still land: the holder's pause (a client node), the
// leader's partition (iptables in the node container that shares the
// server's network namespace), the kill (the engine's SIGKILL of the
// server container, started again on heal). The verdicts are the ones
// the node image's etcd gives.

// shellLessImage builds a local server image (fencecheck/etcd:v3.6 from
// the etcd the node image's build compiled, fencecheck/redis:bookworm
// from the node image's redis-server) and checks that it really has no
// shell.
func shellLessImage(t *testing.T, build func(context.Context, *client.Client, io.Writer) (string, error)) string {
	t.Helper()
	dockerOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cli, err := engine.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	tag, err := build(ctx, cli, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := cli.ContainerCreate(ctx, &container.Config{Image: tag, Cmd: []string{"/bin/sh", "-c", "true"}}, &container.HostConfig{NetworkMode: "none"}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cli.ContainerRemove(context.Background(), resp.ID, container.RemoveOptions{Force: true})
	if err := cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err == nil || !strings.Contains(err.Error(), "/bin/sh") {
		t.Fatalf("%s runs /bin/sh (%v): the image must have no shell", tag, err)
	}
	return tag
}

func serverImageConfig(t *testing.T, backend, image, fencing string, nemesis ...string) Config {
	cfg := dockerConfig(t, backend, fencing, nemesis...)
	cfg.ServerImage = image
	cfg.TimeLimit = 12 * time.Second
	return cfg
}

func TestDockerEtcdFromShellLessImage(t *testing.T) {
	image := shellLessImage(t, func(ctx context.Context, cli *client.Client, w io.Writer) (string, error) {
		return images.BuildEtcdImage(ctx, cli, "3.6", w)
	})
	t.Run("pause-holder unfenced is invalid", func(t *testing.T) {
		out := runDocker(t, serverImageConfig(t, "etcd", image, "none", "pause-holder"))
		wantDocker(t, out, models.Invalid)
		if !strings.Contains(out.Result.Explanation, "stale lease holder's write was accepted") {
			t.Errorf("explanation does not name the stale write: %s", out.Result.Explanation)
		}
	})
	t.Run("pause-holder fenced is valid", func(t *testing.T) {
		out := runDocker(t, serverImageConfig(t, "etcd", image, "all", "pause-holder"))
		wantDocker(t, out, models.Valid)
	})
	t.Run("partition and kill fenced are valid and recover", func(t *testing.T) {
		cfg := serverImageConfig(t, "etcd", image, "all", "partition-primary", "kill-leader")
		cfg.TimeLimit, cfg.NemesisInterval = 20*time.Second, time.Second
		out := runDocker(t, cfg)
		wantDocker(t, out, models.Valid)
		_, events := faultsInjected(t, out)
		ops, _ := history.Pair(events)
		last := ops[len(ops)-2] // the final read, before its release
		if last.F != history.Read || last.Type != history.OK {
			t.Fatalf("the final read did not succeed after healing: %+v", last)
		}
		if p := paramValue(out, "server-image"); p != image {
			t.Errorf("report parameter server-image = %q, want %s", p, image)
		}
	})
}

// Redis from its image (setnx-incr on one master): the holder's pause
// breaks it unfenced and not fenced, and a kill — the engine's SIGKILL of
// the server container, started again with its append-only file on its
// own disk — loses nothing acknowledged.
func TestDockerRedisFromShellLessImage(t *testing.T) {
	image := shellLessImage(t, images.BuildRedisImage)
	t.Run("pause-holder unfenced is invalid", func(t *testing.T) {
		cfg := serverImageConfig(t, "redis", image, "none", "pause-holder")
		cfg.Recipe = "setnx-incr"
		out := runDocker(t, cfg)
		wantDocker(t, out, models.Invalid)
	})
	t.Run("pause-holder and kill fenced are valid", func(t *testing.T) {
		cfg := serverImageConfig(t, "redis", image, "all", "pause-holder", "kill")
		cfg.Recipe, cfg.Options = "setnx-incr", map[string]string{"redis-persistence": "aof-always"}
		cfg.TimeLimit, cfg.NemesisInterval = 15*time.Second, time.Second
		out := runDocker(t, cfg)
		wantDocker(t, out, models.Valid)
		faultsInjected(t, out)
	})
}
