// Package postgres tests locks built on PostgreSQL 15, one server node, in
// two recipes — a lease row taken and renewed by the server's clock, with
// its bumped counter as the fencing token ("lease"), and a session-level
// pg_advisory_lock, with a sequence value as the token ("advisory") or
// none ("advisory-notoken") — and offers PostgreSQL as a shared fenced
// storage for every backend: a row per key, guarded by the fence rule in
// SQL. It never prints, logs or records the generated password.
package postgres

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// Recipes, as --recipe names them.
const (
	RecipeLease           = "lease"
	RecipeAdvisory        = "advisory"
	RecipeAdvisoryNoToken = "advisory-notoken"
)

// Recipes lists them, the default first.
var Recipes = []string{RecipeLease, RecipeAdvisory, RecipeAdvisoryNoToken}

// MinTTL is the shortest lease the backend takes: the keepalive pings
// every TTL/3 and the server ends a session silent for one TTL, which
// leaves no room for a busy two-core machine below this.
const MinTTL = 500 * time.Millisecond

// SecretFile is where, in every client node, the lock server's password
// waits for the agents (root-only, outside backends.LogDir so no log
// collection copies it). The harness hands a DB's endpoints to the agents
// but has no way to hand them a DB's secret, so the DB puts it there
// itself; the shared storage's password travels in ClientSpec.Secret.
const SecretFile = "/etc/fencecheck/postgres-lock.secret"

// DB runs the lock server: PostgreSQL on the first server node, with the
// lease table and the token sequence, and the timeouts of LockTimeouts.
type DB struct {
	Recipe   string
	LeaseTTL time.Duration
	// SynchronousCommit and Fsync are the lock server's settings of
	// those names; "" leaves PostgreSQL's default (on).
	SynchronousCommit, Fsync string
	srv                      *server
}

func (d *DB) Setup(ctx context.Context, c nodes.Nodes, servers []string) error {
	if len(servers) == 0 {
		return fmt.Errorf("postgres needs one server node")
	}
	secret, err := newSecret()
	if err != nil {
		return err
	}
	d.srv = &server{node: servers[0], secret: secret, timeouts: LockTimeouts(d.LeaseTTL), schema: LockSchema}
	if d.SynchronousCommit != "" {
		d.srv.conf += fmt.Sprintf("synchronous_commit = %s\n", d.SynchronousCommit)
	}
	if d.Fsync != "" {
		d.srv.conf += fmt.Sprintf("fsync = %s\n", d.Fsync)
	}
	if err := d.srv.setup(ctx, c); err != nil {
		return err
	}
	for _, n := range c.All() {
		if n.Role != nodes.RoleClient {
			continue
		}
		if err := run(ctx, c, n.Name, "", secret, fmt.Sprintf("umask 077 && mkdir -p %s && cat > %s", dir(SecretFile), SecretFile)); err != nil {
			return fmt.Errorf("handing the password to %s: %w", n.Name, err)
		}
	}
	return nil
}

func dir(path string) string { return path[:strings.LastIndex(path, "/")] }

// Credentials are the lock server's user and generated password.
func (d *DB) Credentials() (user, password string) { return User, d.srv.secret }

func (d *DB) Endpoints() []string { return []string{d.srv.url()} }

func (d *DB) Kill(ctx context.Context, c nodes.Nodes, node string) error {
	return d.srv.kill(ctx, c)
}

// Start brings the server back with its data after a kill (crash
// recovery replays its WAL) and waits until it accepts connections.
func (d *DB) Start(ctx context.Context, c nodes.Nodes, node string) error {
	if err := d.srv.start(ctx, c); err != nil {
		return err
	}
	return d.srv.waitReady(ctx, c)
}

func (d *DB) Primary(context.Context, nodes.Nodes) (string, error) { return d.srv.node, nil }

func (d *DB) LogFiles() []string { return []string{backends.LogDir} }

func (d *DB) Info() map[string]string {
	t := d.srv.timeouts
	return map[string]string{
		"lock service": fmt.Sprintf("PostgreSQL %s on %s, recipe %s", d.srv.version, d.srv.node, d.Recipe),
		"lock server timeouts": fmt.Sprintf("idle_session_timeout %s, tcp_keepalives %s/%s×%d, tcp_user_timeout %s",
			t.IdleSession, t.KeepalivesIdle, t.KeepalivesInterval, t.KeepalivesCount, t.UserTimeout),
	}
}

// OpenClient makes a client of the recipe spec names, in an agent.
// storage is the shared storage's client: every recipe needs one.
func OpenClient(spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error) {
	if len(spec.Endpoints) != 1 {
		return nil, fmt.Errorf("the postgres backend needs one server, got %d endpoints", len(spec.Endpoints))
	}
	if storage == nil {
		return nil, fmt.Errorf("the postgres backend guards a shared storage; %q is none", spec.Storage)
	}
	b, err := os.ReadFile(SecretFile)
	if err != nil {
		return nil, fmt.Errorf("the lock server's password: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	switch spec.Recipe {
	case RecipeLease, "":
		return NewLeaseClient(spec.Endpoints[0], secret, spec.LeaseTTL, storage)
	case RecipeAdvisory, RecipeAdvisoryNoToken:
		return NewAdvisoryClient(spec.Endpoints[0], secret, spec.LeaseTTL, spec.Recipe == RecipeAdvisory, storage)
	}
	return nil, fmt.Errorf("postgres has no recipe %q (accepted: %s)", spec.Recipe, strings.Join(Recipes, ", "))
}

// closeStorage closes a storage client that holds connections.
func closeStorage(s fenced.Storage) {
	if c, ok := s.(interface{ Close() }); ok {
		c.Close()
	}
}

// VersionQuery says how AskVersion asks.
const VersionQuery = "SELECT version() as the superuser over the server's local socket"

// AskVersion asks the lock server for its version with SELECT version(),
// whose whole answer ("PostgreSQL 15.20 (Debian 15.20-0+deb12u1) on …")
// is kept; the version is the release after "PostgreSQL".
func (d *DB) AskVersion(ctx context.Context, c nodes.Nodes, node string) (backends.ServerVersion, error) {
	if d.srv == nil || node != d.srv.node {
		return backends.ServerVersion{}, fmt.Errorf("%s runs no PostgreSQL server", node)
	}
	out, err := backends.AskInNode(ctx, c, node, []string{"runuser", "-u", User, "--", BinDir + "/psql", "-X", "-A", "-t",
		"-h", SocketDir, "-p", fmt.Sprint(Port), "-d", Database, "-c", "SELECT version()"})
	if err != nil {
		return backends.ServerVersion{}, err
	}
	return parseVersion(node, out)
}

func parseVersion(node, out string) (backends.ServerVersion, error) {
	answer := strings.TrimSpace(out)
	rest, ok := strings.CutPrefix(answer, "PostgreSQL ")
	v := backends.Release(rest)
	if !ok || v == "" {
		return backends.ServerVersion{}, fmt.Errorf("%s: SELECT version() answered %q", node, answer)
	}
	return backends.ServerVersion{Answer: answer, Version: v}, nil
}

// ClockCommand prints the server's own wall clock (clock_timestamp()) as
// Unix seconds, for the clock faults, which check that a moved clock
// moved.
func (d *DB) ClockCommand(string) (cmd, what string) {
	return fmt.Sprintf(`runuser -u %s -- %s/psql -X -A -t -q -h %s -p %d -d %s -c 'select extract(epoch from clock_timestamp())'`,
		User, BinDir, SocketDir, Port, Database), "PostgreSQL clock_timestamp()"
}
