package harness

import (
	"fmt"
	"os"
	"testing"

	"github.com/fencecheck/fencecheck/internal/dockertest"
)

// TestMain removes the cluster the Docker tests shared and the binaries
// they built, and fails the process if a test left a container, network
// or volume behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if err := closeSharedClusters(); err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		code = 1
	}
	dockertest.RemoveBinaries()
	os.Exit(code)
}
