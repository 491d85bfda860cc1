package compare

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/fencecheck/fencecheck/backends/all" // the backends the tests run
	"github.com/fencecheck/fencecheck/compose"
	"github.com/fencecheck/fencecheck/harness"
)

func quiet() harness.Signals {
	return harness.Signals{Stop: context.Background(), Abort: context.Background()}
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// dockerOrSkip builds the static check binary the containers run and
// makes sure the engine answers, by the rule of harness's Docker tests:
// skipped under -short, and without an engine, except under CI=true,
// where that fails the test.
func dockerOrSkip(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("Docker tests are not short")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := compose.Connect(ctx)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Docker is required under CI=true: %v", err)
		}
		t.Skipf("no Docker: %v", err)
	}
	cli.Close()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fencecheck-bin")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "check")
		cmd := exec.Command("go", "build", "-o", binPath, "../cmd/check")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = err
			t.Logf("%s", out)
		}
	})
	if binErr != nil {
		t.Fatalf("building the check binary: %v", binErr)
	}
	return binPath
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
