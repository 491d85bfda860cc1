package nodes_test

import (
	"strings"
	"testing"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// hostsOnly is a driver with nothing but Nodes: what an SSH driver is.
type hostsOnly struct{ nodes.Nodes }

func TestDriverWithoutImageServersIsRefusedByName(t *testing.T) {
	var n nodes.Nodes = hostsOnly{}
	if got := nodes.ServerImage(n); got != "" {
		t.Errorf("ServerImage = %q, want \"\" for a driver that runs no server from an image", got)
	}
	if got := nodes.ServerImage(nil); got != "" {
		t.Errorf("ServerImage(nil) = %q, want \"\"", got)
	}
	_, err := nodes.ImageServersOf(n)
	if err == nil || !strings.Contains(err.Error(), "--server-image needs Docker nodes") {
		t.Errorf("ImageServersOf = %v, want the refusal naming --server-image", err)
	}
}

func TestProgramPathIsBesideTheBinary(t *testing.T) {
	if got, want := nodes.ProgramPath("redislock"), "/usr/local/bin/redislock"; got != want {
		t.Errorf("ProgramPath = %q, want %q (beside %s)", got, want, nodes.BinaryPath)
	}
}
