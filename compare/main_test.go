package compare

import (
	"os"
	"testing"

	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// TestMain removes the binaries the Docker tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	dockertest.RemoveBinaries()
	os.Exit(code)
}
