package nats

import (
	"context"
	"fmt"
	"io"

	"github.com/fencecheck/fencecheck/compose/images"
)

// ReleasesAccepted says which exact nats-server releases --server-version
// takes, for help and errors: from 2.10 on, where sync_interval (the
// durability setting a power fault's verdict rests on) came in.
const ReleasesAccepted = "an exact nats-server release from 2.10.0 on (2.10.N, 2.11.N, 2.12.N, …) that the Go module proxy serves, e.g. 2.10.22"

// serverModule is nats-server's Go module, whose root package is its
// command.
const natsServerModule = "github.com/nats-io/nats-server/v2"

// Release is the exact nats-server release version ("2.10.22") as an
// images.Release: the upstream command itself at exactly that version,
// named by the generated module's tool directive, with nothing of
// fencecheck's in it. It refuses what is not an exact release of 2.10 or
// later; whether the proxy serves it is Release.Served's question.
func Release(version string) (images.Release, error) {
	major, minor, _, ok := images.ParseRelease(version)
	if !ok {
		return images.Release{}, fmt.Errorf("%q is not an exact nats-server release (major.minor.patch)", version)
	}
	if major != 2 || minor < 10 {
		return images.Release{}, fmt.Errorf("nats-server %s: fencecheck compiles nats-server 2 from 2.10.0 on, the first with sync_interval (2.9 is Debian's package: --server-version %s)", version, VersionDebian)
	}
	return images.Release{Name: "nats-server", Module: natsServerModule, Version: version, Pkg: natsServerModule}, nil
}

// isRelease says whether version names an exact release rather than a
// named build (2.15, 2.9).
func isRelease(version string) bool {
	_, _, _, ok := images.ParseRelease(version)
	return ok
}

// serverBuild is a nats-server compiled from the module proxy: the
// series build (Server) or an exact release.
type serverBuild interface {
	Binary(ctx context.Context, goarch string, progress io.Writer) ([]byte, error)
}

// build is the compiled server the run's version names.
func (d *DB) build() (serverBuild, error) {
	if isRelease(d.Version) {
		return Release(d.Version)
	}
	return Server, nil
}

// buildVersion is the release the compiled server is, for the report.
func (d *DB) buildVersion() string {
	if isRelease(d.Version) {
		return d.Version
	}
	return Server.Version
}
