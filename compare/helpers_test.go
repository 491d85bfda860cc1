package compare

import (
	"context"
	"strings"
	"testing"

	_ "github.com/fencecheck/fencecheck/backends/all" // the backends the tests run
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/dockertest"
)

func quiet() harness.Signals {
	return harness.Signals{Stop: context.Background(), Abort: context.Background()}
}

// dockerOrSkip makes sure the engine answers and returns the static
// check binary the containers run, by the rule every Docker test follows
// (internal/dockertest).
func dockerOrSkip(t *testing.T) string {
	t.Helper()
	dockertest.Engine(t, engine.Connect)
	return dockertest.CheckBinary(t)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
