package harness

import (
	"github.com/fencecheck/fencecheck/compose/engine"
	"strings"
	"testing"
	"time"
)

// --server-image is refused where it cannot work, naming the flag, before
// anything is created.
func TestServerImageRefusals(t *testing.T) {
	for _, tc := range []struct {
		backend, cluster, image string
		given                   map[string]bool
		version                 string
		nemesis                 []string
		want                    string
	}{
		{"zookeeper", "docker", "zookeeper:3.9", nil, "", nil, "--server-image: backend zookeeper cannot run its servers from an image yet (accepted with: etcd, redis)"},
		{"memory", "", "x", nil, "", nil, "--server-image: backend memory cannot run its servers from an image yet"},
		{"etcd", "docker", "fencecheck/etcd:v3.6", map[string]bool{"server-version": true}, "3.5", nil, "--server-version: the server image fencecheck/etcd:v3.6 decides the server's version"},
		{"etcd", "docker", "two words", nil, "", nil, `--server-image: "two words" is not an image reference`},
		{"redis", "docker", "redis:7", nil, "", []string{"clock-jump"}, "--nemesis: clock-jump cannot reach a server run from an image"},
		{"etcd", "docker", "fencecheck/etcd:v3.6", nil, "", []string{"clock-jump"}, "--nemesis: clock-jump cannot reach a server run from an image"},
		{"etcd", "docker", "fencecheck/etcd:v3.6", nil, "", nil, ""},
	} {
		cfg := memoryConfig(t, "none", "none")
		cfg.Backend, cfg.Cluster, cfg.ServerImage, cfg.Given, cfg.ServerVersion = tc.backend, "", tc.image, tc.given, tc.version
		cfg.Nodes, cfg.LeaseTTL = 3, 2*time.Second
		if tc.nemesis != nil {
			cfg.Nemesis = tc.nemesis
		}
		cfg, err := checked(cfg)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s --server-image %s: %v", tc.backend, tc.image, err)
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%s --server-image %s: got %v, want %q", tc.backend, tc.image, err, tc.want)
		}
	}
}

// A run from a server image never takes or gives a warm cluster: its
// server containers are the image's, made for that run.
func TestServerImageTakesNoWarmCluster(t *testing.T) {
	cfg := Config{Backend: "etcd", ServerImage: "fencecheck/etcd:v3.6"}
	st := &runState{clusters: NewClusters()}
	if k := warmKey(&cfg, st, engine.Spec{Servers: 3, Clients: 5, Image: "fencecheck/node:x", Binary: "/bin/check"}); k != "" {
		t.Errorf("warm key %q for a server-image run", k)
	}
}
