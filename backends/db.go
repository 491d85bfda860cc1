package backends

import (
	"context"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// ClientSpec is everything an agent needs to open a Client, passed to
// `check agent --spec JSON` in a client container (or used in-process).
type ClientSpec struct {
	Backend  string        `json:"backend"`
	Recipe   string        `json:"recipe"`
	Storage  string        `json:"storage"`
	Fencing  string        `json:"fencing"`
	LeaseTTL time.Duration `json:"lease_ttl"`
	// Endpoints of the lock service, e.g. ["http://n1:2379", ...].
	Endpoints []string `json:"endpoints"`
	// StorageURL is the fenced storage node's address.
	StorageURL string `json:"storage_url,omitempty"`
	// Secret carries a generated credential (a database password). It
	// never reaches the history, the reports or the logs.
	Secret string `json:"secret,omitempty"`
	// ServiceSecret is what the lock service's servers made for their
	// clients (Kubernetes: the API server's token and the certificate
	// to trust), from a ClientSecreter DB. Like Secret, it never reaches
	// the history, the reports or the logs.
	ServiceSecret string `json:"service_secret,omitempty"`
	// LeaseCheck is "none" for a client that trusts its grant
	// (--lease-check none); "" or "all" is the careful client.
	LeaseCheck string `json:"lease_check,omitempty"`
	// Process is the history's process id, for naming sessions.
	Process int `json:"process"`
}

// DB is a lock service's servers on a test's nodes (compose/nodes: Docker
// containers today), Jepsen's db protocol: set up, wait until ready, and
// the handles the nemesis needs.
type DB interface {
	// Setup configures and starts the servers on the nodes and returns
	// when the service answers (or fails with the servers' log tails).
	Setup(ctx context.Context, c nodes.Nodes, nodes []string) error
	// Endpoints are what the clients connect to.
	Endpoints() []string
	// Kill stops a node's server at once (SIGKILL); Start brings it back
	// with its data.
	Kill(ctx context.Context, c nodes.Nodes, node string) error
	Start(ctx context.Context, c nodes.Nodes, node string) error
	// Primary is the node that leads now ("" when the service has none).
	Primary(ctx context.Context, c nodes.Nodes) (string, error)
	// LogFiles are the server logs to collect from every server node.
	LogFiles() []string
	// Info describes the servers for the report (versions).
	Info() map[string]string
}

// LeaderWatcher is a DB whose service moves its leader by itself (Redis
// Sentinel's failovers). The harness watches it during the workload and
// records each move beside the faults, as a nemesis event "failover"
// (docs/history.md): moved(true, old) when a failover begins,
// moved(false, new) when the new leader is named, moved(false, "") when
// the watch ended with a failover begun and no leader named.
type LeaderWatcher interface {
	WatchLeader(ctx context.Context, c nodes.Nodes, moved func(begun bool, node string))
}

// Maintainer is a DB whose servers the run asked to do their own
// upkeep while the workload runs (etcd's compaction and
// defragmentation, by the backend's own flags): upkeep is where several
// published bugs of lock servers live, so a crash must be able to meet
// it. The harness runs Maintain beside the workload, from its start
// until its end (not during setup, the heal or the final reads), and
// names no service. Maintain returns at once when the run asked for no
// upkeep, and as soon as ctx ends otherwise.
type Maintainer interface {
	// Maintain does the upkeep until ctx ends. Every task and the
	// servers' answer goes to logf (check.log). A task a server refuses
	// or cannot answer (a member down under a fault) is logged and
	// tried again at the next turn, never an error of the run: Maintain
	// returns what it did, for the run's summary line.
	Maintain(ctx context.Context, c nodes.Nodes, logf func(format string, args ...any)) MaintenanceDone
}

// MaintenanceDone counts a Maintain's tasks by what they were
// ("compaction", "defragmentation"), in the order they were first done.
type MaintenanceDone []MaintenanceCount

// MaintenanceCount is one kind of task: how many were asked and how many
// the servers answered with success.
type MaintenanceCount struct {
	Task      string
	Asked, OK int
}

// Preparer is a DB that needs something made on the host before its
// servers can start (etcd's builds compiled on demand). The harness calls
// Prepare in the run's image phase, before any container exists, with
// the Docker engine's architecture and the user's progress output: a
// compile of a minute or two is shown, not hidden in the servers' start,
// and a failure leaves nothing to clean up.
type Preparer interface {
	Prepare(ctx context.Context, arch string, progress io.Writer) error
}

// Credentialed is a DB whose clients log in. The harness hands the user
// and password to clients that are not fencecheck's own (--client) in
// their init message; they never reach the history, reports or logs.
type Credentialed interface {
	Credentials() (user, password string)
}

// BearerAuthed is a DB whose clients present a bearer token over HTTPS
// to a server with a certificate of its own making (Kubernetes' API
// server). The harness hands both to clients that are not fencecheck's
// own (--client) in their init message; like Credentialed's, they never
// reach the history, reports or logs.
type BearerAuthed interface {
	BearerAuth() (token, caPEM string)
}

// ClientSecreter is a DB whose servers make, at Setup, something every
// built-in client needs to reach them (a bearer token, the certificate
// authority of a self-signed serving certificate): the harness puts it in
// each client's spec (ClientSpec.ServiceSecret) once Setup has returned.
type ClientSecreter interface {
	ClientSecret() string
}

// ServerVersion is a server's own answer to "what are you?", asked of the
// running server (not read from a package or a binary on disk): what a
// run records as the version it tested.
type ServerVersion struct {
	// Answer is the part of the server's answer that names its version,
	// verbatim (ZooKeeper's srvr says "3.8.0-${mvngit.commit.id}, built on
	// …" for Debian's build, and that is what is kept).
	Answer string
	// Version is the useful part of it: the release, e.g. "3.8.0".
	Version string
}

// VersionAsker is a DB that can ask one of its servers what it is. The
// harness asks every server node once the last fault is healed, retries
// briefly, and records a node that does not answer as unknown: a version
// query never fails a run or changes its verdict.
type VersionAsker interface {
	AskVersion(ctx context.Context, c nodes.Nodes, node string) (ServerVersion, error)
}

// Release is the leading release number of a version answer, e.g.
// "3.8.0" of "3.8.0-${mvngit.commit.id}, built on …" or "15.20" of
// "15.20 (Debian 15.20-0+deb12u1)"; "" when the answer starts with none.
func Release(answer string) string {
	return releasePrefix.FindString(strings.TrimSpace(answer))
}

var releasePrefix = regexp.MustCompile(`^v?[0-9]+(\.[0-9]+)*`)
