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

// bareHosts is a driver whose machines know one another by address only.
type bareHosts struct {
	nodes.Nodes
	all []nodes.Node
}

func (b bareHosts) Bare() bool { return true }

func (b bareHosts) Node(name string) (nodes.Node, error) {
	for _, n := range b.all {
		if n.Name == name {
			return n, nil
		}
	}
	return nodes.Node{}, &unknownNode{name}
}

type unknownNode struct{ name string }

func (e *unknownNode) Error() string { return "no node " + e.name }

func TestPeerHostIsTheNameOnDockerAndTheAddressOnBareHosts(t *testing.T) {
	if got, err := nodes.PeerHost(hostsOnly{}, "n1"); err != nil || got != "n1" {
		t.Errorf("PeerHost on a driver whose network resolves names = %q, %v; want n1", got, err)
	}
	b := bareHosts{all: []nodes.Node{{Name: "n1", IP: "10.0.0.11", Role: nodes.RoleServer}, {Name: "storage", Role: nodes.RoleStorage}}}
	if !nodes.IsBare(b) || nodes.IsBare(hostsOnly{}) {
		t.Fatalf("IsBare: bare %v, plain %v", nodes.IsBare(b), nodes.IsBare(hostsOnly{}))
	}
	if got, err := nodes.PeerHost(b, "n1"); err != nil || got != "10.0.0.11" {
		t.Errorf("PeerHost(n1) on bare hosts = %q, %v; want 10.0.0.11", got, err)
	}
	if _, err := nodes.PeerHost(b, "storage"); err == nil || !strings.Contains(err.Error(), "storage") {
		t.Errorf("PeerHost of a node without an address = %v, want an error naming it", err)
	}
	if _, err := nodes.PeerHost(b, "n9"); err == nil || !strings.Contains(err.Error(), "n9") {
		t.Errorf("PeerHost of an unknown node = %v, want an error naming it", err)
	}
}
