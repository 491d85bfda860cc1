package images

// Integration tests against the real Docker engine. Whether they run is
// internal/dockertest's rule (skipped under -short, and when no daemon
// answers, except under CI=true, where they run or fail). The first run
// builds the node image (debootstrap, apt, etcd 3.6): give it
// `-timeout 30m`.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

func TestDockerImage(t *testing.T) {
	cli := dockertest.Engine(t, engine.Connect)
	tag := dockertest.NodeImage(t, cli, EnsureImage)
	if tag != ImageTag() {
		t.Fatalf("EnsureImage returned %s, want %s", tag, ImageTag())
	}
	ctx := context.Background()
	info, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s, %.0f MB", tag, info.ID, float64(info.Size)/1e6)
	if got := strings.Join(info.Config.Cmd, " "); got != "sleep infinity" {
		t.Errorf("CMD = %q, want sleep infinity", got)
	}

	// A second EnsureImage finds the tag and returns at once.
	start := time.Now()
	again, err := EnsureImage(ctx, cli, dockertest.LogWriter(t))
	if err != nil || again != tag {
		t.Fatalf("second EnsureImage = %q, %v", again, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("second EnsureImage took %s", d)
	}
}

// TestDockerImageRebuild checks that BuildImage reuses every cached layer:
// the etcd 3.6 binary builds byte for byte alike, so the image is the same.
func TestDockerImageRebuild(t *testing.T) {
	cli := dockertest.Engine(t, engine.Connect)
	tag := dockertest.NodeImage(t, cli, EnsureImage)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	before, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := BuildImage(ctx, cli, dockertest.LogWriter(t)); err != nil {
		t.Fatal(err)
	}
	t.Logf("cached BuildImage took %s", time.Since(start).Round(time.Millisecond))
	after, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	if before.ID != after.ID {
		t.Errorf("rebuild changed the image: %s -> %s", before.ID, after.ID)
	}
}

// The node image is the core image and Debian's servers on top: the
// core's layers are the first of the node image's, and the core is the
// smaller by the servers' packages.
func TestDockerCoreImage(t *testing.T) {
	cli := dockertest.Engine(t, engine.Connect)
	tag := dockertest.NodeImage(t, cli, EnsureImage)
	ctx := context.Background()
	core, err := EnsureCoreImage(ctx, cli, dockertest.LogWriter(t))
	if err != nil {
		t.Fatal(err)
	}
	if core != CoreImageTag() {
		t.Fatalf("EnsureCoreImage returned %s, want %s", core, CoreImageTag())
	}
	coreInfo, err := cli.ImageInspect(ctx, core)
	if err != nil {
		t.Fatal(err)
	}
	nodeInfo, err := cli.ImageInspect(ctx, tag)
	if err != nil {
		t.Fatal(err)
	}
	cl, nl := coreInfo.RootFS.Layers, nodeInfo.RootFS.Layers
	if len(nl) <= len(cl) || strings.Join(nl[:len(cl)], ",") != strings.Join(cl, ",") {
		t.Errorf("%s (%d layers) is not built on %s (%d layers)", tag, len(nl), core, len(cl))
	}
	if got := strings.Join(coreInfo.Config.Cmd, " "); got != "sleep infinity" {
		t.Errorf("the core's CMD = %q, want sleep infinity", got)
	}
	t.Logf("%s %.0f MB, %s %.0f MB", core, float64(coreInfo.Size)/1e6, tag, float64(nodeInfo.Size)/1e6)
}
