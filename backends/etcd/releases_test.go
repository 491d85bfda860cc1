package etcd

import (
	"slices"
	"testing"

	"github.com/fencecheck/fencecheck/backends/registry"
)

// An exact release runs from its own file in the nodes, compiled for the
// run; the named builds keep theirs.
func TestBinaryOfARelease(t *testing.T) {
	for v, want := range map[string]string{"3.5.4": "/usr/local/bin/etcd-3.5.4", "3.5": "/usr/local/bin/etcd-3.5", "3.4": "/usr/bin/etcd", "3.6": "/usr/local/bin/etcd-3.6"} {
		if got := (&DB{Version: v}).binary(); got != want {
			t.Errorf("%s runs %s, want %s", v, got, want)
		}
	}
	if !onDemand("3.5.4") || !onDemand("3.6.16") || onDemand("3.4") || onDemand("3.6") {
		t.Error("an exact release is compiled for the run; 3.4 and 3.6 are the node image's")
	}
}

// etcd runs on one member too: etcd's single-node bugs need it.
func TestOneMember(t *testing.T) {
	b, _ := registry.Lookup("etcd")
	if !slices.Contains(b.Nodes, 1) {
		t.Errorf("etcd takes %v server nodes, not 1", b.Nodes)
	}
	if b.Releases == nil || b.Releases.Check("3.5.4") != nil || b.Releases.Check("3.4.23") == nil {
		t.Error("the registry entry does not take exact releases from 3.5 on")
	}
}
