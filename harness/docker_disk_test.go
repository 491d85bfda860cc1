package harness

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
)

// A full disk under the store: the static check binary runs the in-process
// memory backend in a container whose /store is a 128 KiB tmpfs, so the
// history fills it within a second or two. The run ends early and exits
// 255 saying the history could not be saved, with the first write error
// (no space left on device) first, not an error that followed from it;
// every line of the history is whole (a half-written last one is cut off).
func TestDockerFullDiskIsReported(t *testing.T) {
	bin := dockerOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cli, err := engine.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	image, err := images.EnsureImage(ctx, cli, testWriter{t})
	if err != nil {
		t.Fatal(err)
	}
	id := uniqueTestID("disk")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := engine.DownAll(ctx, cli, id); err != nil {
			t.Error(err)
		}
	})
	labels := engine.Labels(id)
	labels[engine.LabelNode] = "c1"
	labels[engine.LabelRole] = engine.RoleClient
	init := true
	created, err := cli.ContainerCreate(ctx,
		&container.Config{Image: image, Labels: labels, Hostname: "c1"},
		&container.HostConfig{NetworkMode: "none", Init: &init, Tmpfs: map[string]string{"/store": "size=128k"}},
		nil, nil, engine.ContainerName(id, "c1"))
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "check", Mode: 0o755, Size: int64(len(exe)), Typeflag: tar.TypeReg})
	tw.Write(exe)
	tw.Close()
	if err := cli.CopyToContainer(ctx, created.ID, "/usr/local/bin/", &tb, container.CopyToContainerOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	cl, err := engine.Attach(ctx, cli, id)
	if err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	res, err := cl.Exec(ctx, "c1", []string{engine.BinaryPath, "--backend", "memory", "--fencing", "all", "--nemesis", "pause",
		"--time-limit", "60s", "--lease-ttl", "200ms", "--nemesis-interval", "400ms", "--seed", "1", "--store", "/store"})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	t.Logf("exit %d after %s\nstderr: %s", res.ExitCode, took.Round(time.Millisecond), res.Stderr)
	if res.ExitCode != ExitFailed {
		t.Errorf("exit %d, want %d\nstdout: %s", res.ExitCode, ExitFailed, res.Stdout)
	}
	first, _, _ := strings.Cut(res.Stderr, "\n")
	if !strings.HasPrefix(first, "check: the history could not be saved: ") || !strings.Contains(first, "no space left on device") {
		t.Errorf("the first line of the message is not the history's first write error: %q", first)
	}
	if took > 40*time.Second {
		t.Errorf("the run went on for %s with a history it could not write", took)
	}

	hist, err := cl.Exec(ctx, "c1", []string{"sh", "-c", "cat /store/*/*/history.jsonl"})
	if err != nil || hist.ExitCode != 0 {
		t.Fatalf("reading the history back: %v %+v", err, hist)
	}
	sc := bufio.NewScanner(strings.NewReader(hist.Stdout))
	sc.Buffer(nil, 1<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) < 10 {
		t.Fatalf("only %d lines of history on a 128 KiB store", len(lines))
	}
	// The recorder cuts a half-written line back off: every line is whole.
	for i, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("history line %d of %d is not whole: %q", i+1, len(lines), l)
		}
	}
	t.Logf("%d lines (%d bytes) of history kept", len(lines), len(hist.Stdout))
}
