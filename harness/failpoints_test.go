package harness

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// A failpoint where the servers have no failpoint build is bad input,
// refused before anything is created, naming the flag and saying why:
// another backend, Debian's etcd, the user's server image. None of these
// reads a release's source.
func TestFailpointsRefusedWhereTheServersHaveNone(t *testing.T) {
	for _, tc := range []struct {
		backend, version, image string
		flag, why               string
	}{
		{"redis", "", "", "nemesis", "backend redis's servers have no failpoint build (backends with one: etcd)"},
		{"zookeeper", "", "", "nemesis", "have no failpoint build"},
		{"etcd", "3.4", "", "failpoint", "etcd 3.4 has no failpoint build (it is Debian's package"},
		{"etcd", "", "gcr.io/etcd-development/etcd:v3.6.16", "", "drop --server-image"},
	} {
		cfg := memoryConfig(t, "none", "failpoint")
		cfg.Backend, cfg.Cluster, cfg.Nodes, cfg.ServerVersion, cfg.ServerImage = tc.backend, registry.ClusterDocker, 3, tc.version, tc.image
		cfg.LeaseTTL = 2 * time.Second
		cfg.Options = map[string]string{"failpoint": "raftBeforeSave=panic"}
		_, err := Resolve(cfg)
		var ue *usage.Error
		if !errors.As(err, &ue) || (tc.flag != "" && ue.Flag != tc.flag) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%+v: %v, want a usage error naming --%s that says %q", tc, err, tc.flag, tc.why)
		}
	}
}

// --failpoint list is refused, naming --failpoint, where there is nothing
// to list.
func TestFailpointListWithoutAFailpointBuild(t *testing.T) {
	for backend, version := range map[string]string{"redis": "", "etcd": "3.4", "nosuch": ""} {
		_, err := Failpoints(Config{Backend: backend, ServerVersion: version})
		var ue *usage.Error
		if !errors.As(err, &ue) {
			t.Errorf("%s %s: %v, want a usage error", backend, version, err)
		}
	}
	if _, err := Failpoints(Config{Backend: "etcd", ServerVersion: "9.9"}); err == nil || !strings.Contains(err.Error(), "9.9") {
		t.Errorf("an unknown etcd release: %v", err)
	}
}
