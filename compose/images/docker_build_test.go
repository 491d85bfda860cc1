package images

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// An image build interrupted while a step runs: dockerBuild returns at
// once with a message that says so, the daemon kills and removes the
// step's container, and nothing is tagged. The build is a scratch one (its
// own tag and a label no other build has, so nothing is cached) whose step
// sleeps for ten minutes: only the interrupt can end it in time.
func TestDockerImageBuildInterrupted(t *testing.T) {
	cli := dockertest.Engine(t, engine.Connect)
	base := dockertest.NodeImage(t, cli, EnsureImage)
	id := dockertest.TestID()
	tag := "fencecheck/scratch:" + id
	label := "fencecheck.scratch=" + id
	byLabel := filters.NewArgs(filters.Arg("label", label))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cs, _ := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: byLabel})
		for _, c := range cs {
			cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true})
		}
		// The steps before the interrupted one were committed as untagged
		// images: remove them, newest first.
		imgs, _ := cli.ImageList(ctx, image.ListOptions{All: true, Filters: byLabel})
		for i := len(imgs) - 1; i >= 0; i-- {
			cli.ImageRemove(ctx, imgs[i].ID, image.RemoveOptions{Force: true, PruneChildren: true})
		}
		cli.ImageRemove(ctx, tag, image.RemoveOptions{Force: true})
	})

	dockerfile := fmt.Sprintf("FROM %s\nLABEL fencecheck.scratch=%s\nRUN sleep 600\n", base, id)
	var tarball bytes.Buffer
	if err := writeContext(&tarball, []contextFile{{"Dockerfile", 0o644, []byte(dockerfile)}}); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	errc <- nil

	// Interrupt once the step's container runs.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var interruptedAt time.Time
	seen := make(chan string, 1)
	go func() {
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) && ctx.Err() == nil {
			cs, err := cli.ContainerList(context.Background(), container.ListOptions{Filters: byLabel})
			if err == nil && len(cs) > 0 {
				seen <- cs[0].ID
				interruptedAt = time.Now()
				cancel()
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		close(seen)
	}()
	began := time.Now()
	err := dockerBuild(ctx, cli, tag, io.NopCloser(&tarball), errc,
		build.ImageBuildOptions{Dockerfile: "Dockerfile"}, dockertest.LogWriter(t))
	returned := time.Now()
	step, ok := <-seen
	if !ok {
		t.Fatalf("the build's step never ran (build returned %v after %s)", err, returned.Sub(began))
	}
	if err == nil || !strings.Contains(err.Error(), "interrupted") || !strings.Contains(err.Error(), tag) {
		t.Fatalf("an interrupted build returned %v; want an error naming %s and the interrupt", err, tag)
	}
	if took := returned.Sub(interruptedAt); took > 5*time.Second {
		t.Errorf("the build returned %s after the interrupt", took)
	}
	t.Logf("step container %.12s ran; build returned %s after the interrupt: %v", step, returned.Sub(interruptedAt).Round(time.Millisecond), err)

	// The daemon kills and removes the step's container.
	var left []string
	for end := time.Now().Add(30 * time.Second); ; {
		cs, err := cli.ContainerList(context.Background(), container.ListOptions{All: true, Filters: byLabel})
		if err != nil {
			t.Fatal(err)
		}
		left = left[:0]
		for _, c := range cs {
			left = append(left, fmt.Sprintf("%.12s %s", c.ID, c.State))
		}
		if len(left) == 0 || time.Now().After(end) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("build containers left 30 s after the interrupt: %v", left)
	} else {
		t.Logf("no build container left %s after the interrupt", time.Since(interruptedAt).Round(time.Millisecond))
	}
	if _, err := cli.ImageInspect(context.Background(), tag); !cerrdefs.IsNotFound(err) {
		t.Errorf("%s exists after an interrupted build (%v)", tag, err)
	}
}

// A build that fails in quiet mode prints the failing step's name and the
// last lines the daemon sent of it, and tags nothing. The build is a
// scratch one whose step prints two lines and fails.
func TestDockerImageBuildFailureQuiet(t *testing.T) {
	cli := dockertest.Engine(t, engine.Connect)
	base := dockertest.NodeImage(t, cli, EnsureImage)
	id := dockertest.TestID()
	tag := "fencecheck/scratch:" + id
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cli.ImageRemove(ctx, tag, image.RemoveOptions{Force: true})
	})
	dockerfile := fmt.Sprintf("FROM %s\nRUN echo fencecheck-first-%s; echo fencecheck-last-%s; exit 3\n", base, id, id)
	var tarball bytes.Buffer
	if err := writeContext(&tarball, []contextFile{{"Dockerfile", 0o644, []byte(dockerfile)}}); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	errc <- nil
	var printed bytes.Buffer
	out := NewBuildOutput(&printed, BuildOutputOptions{LogDir: t.TempDir()})
	step := out.Begin("scratch packages (docker build)")
	err := dockerBuild(context.Background(), cli, tag, io.NopCloser(&tarball), errc,
		build.ImageBuildOptions{Dockerfile: "Dockerfile"}, step)
	if err == nil {
		t.Fatal("a step that exits 3 built")
	}
	err = step.Fail(err, false)
	out.Close()
	t.Logf("printed:\n%s", printed.String())
	for _, want := range []string{"scratch packages (docker build)", "FAILED", "fencecheck-last-" + id, out.LogPath()} {
		if !strings.Contains(printed.String(), want) {
			t.Errorf("quiet output lacks %q", want)
		}
	}
	if !strings.Contains(err.Error(), "scratch packages (docker build): ") || !strings.Contains(err.Error(), "non-zero code: 3") {
		t.Errorf("error = %v, want the step's name and the exit code", err)
	}
	if _, err := cli.ImageInspect(context.Background(), tag); !cerrdefs.IsNotFound(err) {
		t.Errorf("%s exists after a failed build (%v)", tag, err)
	}
}
