package engine

import (
	"slices"
	"testing"
)

// The layer's container: in the node's PID namespace, entering its mount
// namespace, with what a FUSE mount needs and nothing that --privileged
// would add (this engine refuses it), and never taken for a node.
func TestFSLayerConfig(t *testing.T) {
	cfg, hc := FSLayerConfig("t1", "n2", "abc123", "fencecheck/node:x", []string{"/usr/local/bin/check", "lossyfs", "serve", "/d", "/d.disk"})
	if got := string(hc.PidMode); got != "container:abc123" {
		t.Errorf("PidMode %q: the layer must share the node's PID namespace to reach its /proc/1", got)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"nsenter", "--target", "1", "--mount", "--"}) {
		t.Errorf("entrypoint %q: the daemon must enter the node's mount namespace", cfg.Entrypoint)
	}
	if hc.Privileged || !slices.Equal(hc.CapAdd, []string{"SYS_ADMIN", "SYS_PTRACE"}) || string(hc.NetworkMode) != "none" {
		t.Errorf("privileged %v, caps %v, network %q", hc.Privileged, hc.CapAdd, hc.NetworkMode)
	}
	if len(hc.Devices) != 1 || hc.Devices[0].PathOnHost != "/dev/fuse" {
		t.Errorf("devices %v, want /dev/fuse alone", hc.Devices)
	}
	if cfg.Labels[LabelFSLayer] != "1" || cfg.Labels[LabelNode] != "n2" || cfg.Labels[LabelTest] != "t1" || cfg.Labels[LabelRole] != "" {
		t.Errorf("labels %v: a layer carries its node and test, and no role (it is no node)", cfg.Labels)
	}
	if FSLayerName("t1", "n2") != "fc-t1-n2-fs" {
		t.Errorf("name %q", FSLayerName("t1", "n2"))
	}
}
