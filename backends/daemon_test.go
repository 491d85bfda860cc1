package backends

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/compose"
)

// A server that never becomes ready fails the wait within its bound, and
// the error carries the tail of the server's log.
func TestServerThatNeverStartsFailsWithItsLog(t *testing.T) {
	ctx := context.Background()
	cli, err := compose.Connect(ctx)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Docker is required under CI=true: %v", err)
		}
		t.Skipf("no Docker: %v", err)
	}
	defer cli.Close()
	image, err := compose.EnsureImage(ctx, cli, nil)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "check")
	build := exec.Command("go", "build", "-o", bin, "../cmd/check")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	c, err := compose.Up(ctx, cli, compose.Spec{TestID: "daemon-test", Image: image, Servers: 1, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Down(context.Background()) })
	if err := StartDaemon(ctx, c, "n1", "broken", []string{"sh", "-c", "echo 'FATAL: data directory is corrupt'; exit 1"}, compose.ExecOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = WaitUntil(ctx, c, "n1", "broken", []string{compose.BinaryPath, "probe", "http://127.0.0.1:9/health"}, 3*time.Second)
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
