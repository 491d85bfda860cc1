package nats

import (
	"strings"

	"github.com/fencecheck/fencecheck/compose/images"
)

//go:generate go test -run TestServerModuleMatchesDirectory -update .

// The --server-version values: the release compiled from the module
// proxy (the default) and Debian's package.
const (
	VersionModule = "2.15"
	VersionDebian = "2.9"
)

// DebianVersion is the release Debian's nats-server package (bookworm)
// holds, installed in the node image at DebianBinary.
const DebianVersion = "2.9.10"

// DebianBinary is where Debian's package puts nats-server.
const DebianBinary = "/usr/sbin/nats-server"

// ServerVersion is the nats-server release the wrapper module
// (backends/nats/natsserver) requires; the server's own /varz says it
// again at run time, and that answer is what a run records.
const ServerVersion = "2.15.3"

// Server is nats-server compiled from the Go module proxy on first use
// and kept in the user's cache: the upstream command itself, named by
// the wrapper module's tool directive, with nothing of fencecheck's in
// it.
var Server = images.ModuleServer{
	Name:    "nats-server",
	Version: ServerVersion,
	Module:  serverModule,
	Pkg:     "github.com/nats-io/nats-server/v2",
}

// serverModuleNames are the wrapper module's files, embedded (a nested
// module cannot be go:embed'ed) in server_files.go by go generate.
var serverModuleNames = []string{"go.mod", "go.sum"}

// moduleRequires says whether a go.mod requires nats-server at version.
func moduleRequires(gomod, version string) bool {
	return strings.Contains(gomod, "github.com/nats-io/nats-server/v2 v"+version+" ")
}
