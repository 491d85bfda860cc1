package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// LockdPort is where `check lockd` listens in its node.
const LockdPort = 7000

// DB runs the lease service as `check lockd` on the first server node: one
// node, no replication — the point of this backend is the lease recipe, not
// the service's availability.
type DB struct {
	TTL  time.Duration
	node string
}

func (d *DB) Setup(ctx context.Context, c nodes.Nodes, servers []string) error {
	if len(servers) == 0 {
		return fmt.Errorf("the memory lock service needs one server node")
	}
	d.node = servers[0]
	if err := d.Start(ctx, c, d.node); err != nil {
		return err
	}
	return backends.WaitUntil(ctx, c, d.node, "lockd",
		[]string{nodes.BinaryPath, "probe", fmt.Sprintf("http://127.0.0.1:%d/health", LockdPort)}, 30*time.Second)
}

func (d *DB) Endpoints() []string { return []string{fmt.Sprintf("http://%s:%d", d.node, LockdPort)} }

func (d *DB) Kill(ctx context.Context, c nodes.Nodes, node string) error {
	return backends.KillDaemon(ctx, c, node, "lockd")
}

func (d *DB) Start(ctx context.Context, c nodes.Nodes, node string) error {
	return backends.StartDaemon(ctx, c, node, "lockd",
		[]string{nodes.BinaryPath, "lockd", "--listen", fmt.Sprintf(":%d", LockdPort), "--lease-ttl", d.TTL.String()}, nodes.ExecOptions{})
}

func (d *DB) Primary(context.Context, nodes.Nodes) (string, error) { return d.node, nil }

func (d *DB) LogFiles() []string { return []string{backends.LogDir} }

func (d *DB) Info() map[string]string {
	return map[string]string{"lock service": "memory lease service (check lockd) on " + d.node}
}

// VersionQuery says how AskVersion asks.
const VersionQuery = "GET /version of check lockd (the fencecheck build); in process, the running build"

// AskVersion asks `check lockd` which fencecheck build it is.
func (d *DB) AskVersion(ctx context.Context, c nodes.Nodes, node string) (backends.ServerVersion, error) {
	body, err := backends.HTTPGetInNode(ctx, c, node, LockdPort, "/version")
	if err != nil {
		return backends.ServerVersion{}, err
	}
	var v backends.ServerVersion
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Version == "" {
		return backends.ServerVersion{}, fmt.Errorf("%s: lockd's /version answered %q", node, body)
	}
	return v, nil
}
