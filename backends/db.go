package backends

import (
	"context"
	"time"

	"github.com/fencecheck/fencecheck/compose"
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
	// LeaseCheck is "none" for a client that trusts its grant
	// (--lease-check none); "" or "all" is the careful client.
	LeaseCheck string `json:"lease_check,omitempty"`
	// Process is the history's process id, for naming sessions.
	Process int `json:"process"`
}

// DB is a lock service's servers on a Docker cluster, Jepsen's db
// protocol: set up, wait until ready, and the handles the nemesis needs.
type DB interface {
	// Setup configures and starts the servers on the nodes and returns
	// when the service answers (or fails with the servers' log tails).
	Setup(ctx context.Context, c *compose.Cluster, nodes []string) error
	// Endpoints are what the clients connect to.
	Endpoints() []string
	// Kill stops a node's server at once (SIGKILL); Start brings it back
	// with its data.
	Kill(ctx context.Context, c *compose.Cluster, node string) error
	Start(ctx context.Context, c *compose.Cluster, node string) error
	// Primary is the node that leads now ("" when the service has none).
	Primary(ctx context.Context, c *compose.Cluster) (string, error)
	// LogFiles are the server logs to collect from every server node.
	LogFiles() []string
	// Info describes the servers for the report (versions).
	Info() map[string]string
}

// Credentialed is a DB whose clients log in. The harness hands the user
// and password to clients that are not fencecheck's own (--client) in
// their init message; they never reach the history, reports or logs.
type Credentialed interface {
	Credentials() (user, password string)
}
