package backends

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// A server that never becomes ready fails the wait within its bound, and
// the error carries the tail of the server's log.
func TestDockerServerThatNeverStartsFailsWithItsLog(t *testing.T) {
	ctx := context.Background()
	cli := dockertest.Engine(t, engine.Connect)
	image, err := images.EnsureImage(ctx, cli, nil)
	if err != nil {
		t.Fatal(err)
	}
	bin := dockertest.CheckBinary(t)
	c, err := engine.Up(ctx, cli, engine.Spec{TestID: "daemon-test", Image: image, Servers: 1, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Down(context.Background()) })
	if err := StartDaemon(ctx, c, "n1", "broken", []string{"sh", "-c", "echo 'FATAL: data directory is corrupt'; exit 1"}, engine.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = WaitUntil(ctx, c, "n1", "broken", []string{engine.BinaryPath, "probe", "http://127.0.0.1:9/health"}, 3*time.Second)
	if err == nil {
		t.Fatal("a server that never started was reported ready")
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the wait took %s, bound 3 s", took)
	}
	if !strings.Contains(err.Error(), "data directory is corrupt") {
		t.Errorf("the error does not carry the log tail: %v", err)
	}
}
