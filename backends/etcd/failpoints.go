package etcd

import (
	"context"
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/images"
)

// etcd's failpoints: the servers of a run that arms one (the failpoint
// fault) run etcd's failpoint build, the same release with gofail enabled
// over the packages etcd's own failpoint builds name
// (images.EtcdFailpointBinary), compiled on first use and cached apart
// from the plain binary, and serve gofail's endpoint on FailpointPort.

// FailpointPort is where each server serves gofail's HTTP endpoint
// (GOFAIL_HTTP), on every address of its node: the cluster network, and
// the node's loopback, where the failpoint fault reaches it from inside
// the node as the other questions to a server go (so a remote Docker
// engine works as a local one).
const FailpointPort = 22381

var failpoints = &registry.Failpoints{
	List: listFailpoints,
	Port: FailpointPort,
	// TestDockerEtcd14370RaftBeforeSavePanic's pair.
	Prepared: []string{"3.5.4", "3.5.5"},
	What: fmt.Sprintf("etcd built with gofail %s (gofail enable over the packages etcd's own failpoint builds name), for the releases compiled from the Go module proxy (%s, and every exact release)",
		images.GofailVersion, strings.Join(images.EtcdFailpointVersions(), ", ")),
}

// failpointBinary is where the failpoint build of version is put in the
// server nodes.
func failpointBinary(version string) string {
	return "/usr/local/bin/" + images.EtcdFailpointBinaryName(version)
}

// hasFailpointBuild says why version has no failpoint build, or nil.
func hasFailpointBuild(version string) error {
	if images.HasEtcdFailpointBuild(version) == nil {
		return nil
	}
	why := "it is not compiled here"
	if version == "3.4" {
		why = "it is Debian's package, whose source fencecheck does not rebuild"
	}
	return fmt.Errorf("etcd %s has no failpoint build (%s): failpoints need a release compiled from the Go module proxy, --server-version %s, or %s",
		version, why, registry.OrList(images.EtcdFailpointVersions()), images.EtcdReleasesAccepted)
}

// listFailpoints names the failpoints of s's release, from its source.
func listFailpoints(ctx context.Context, s registry.Setup) ([]string, error) {
	if err := hasFailpointBuild(s.ServerVersion); err != nil {
		return nil, err
	}
	fps, err := images.EtcdFailpoints(ctx, s.ServerVersion)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(fps))
	for i, f := range fps {
		names[i] = f.Name
	}
	return names, nil
}

// failpointEnv is the servers' environment for the failpoint build:
// gofail's endpoint on FailpointPort; none for the plain build.
func (d *DB) failpointEnv() []string {
	if !d.Failpoints {
		return nil
	}
	return []string{fmt.Sprintf("GOFAIL_HTTP=0.0.0.0:%d", FailpointPort)}
}
