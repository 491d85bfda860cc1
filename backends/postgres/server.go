package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// Where PostgreSQL lives in the node image (Debian's postgresql-15) and in
// a node.
const (
	BinDir  = "/usr/lib/postgresql/15/bin"
	DataDir = "/var/lib/fencecheck/postgres"
	// SocketDir is Debian's default socket directory, which the image
	// creates; the local tools (pg_isready, psql) find the server there.
	SocketDir = "/var/run/postgresql"
	Port      = 5432
	// User is the only role: the superuser initdb makes. Clients log in
	// as it with the generated password.
	User     = "postgres"
	Database = "postgres"
	// daemon names the server's log and pid files in backends.LogDir.
	daemon = "postgres"
	// pwDir holds the password file for initdb for a moment.
	pwDir = "/var/lib/fencecheck/postgres-init"
)

// newSecret is a generated password: 32 hex digits from crypto/rand.
func newSecret() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generating the database password: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Timeouts are the server settings that decide when PostgreSQL gives up on
// a client that went silent. A session's advisory locks live exactly as
// long as the session, so these are what bound a lost client's lock.
type Timeouts struct {
	// IdleSession ends a session idle (waiting for the client's next
	// statement, outside a transaction) for this long. It is the only
	// one that fires for a frozen client: a paused container's kernel
	// still ACKs TCP, so the keepalives and tcp_user_timeout never do.
	IdleSession time.Duration
	// KeepalivesIdle, KeepalivesInterval (whole seconds) and
	// KeepalivesCount probe a connection the server has not heard from;
	// they fire for a client cut off by the network.
	KeepalivesIdle, KeepalivesInterval time.Duration
	KeepalivesCount                    int
	// UserTimeout drops a connection whose sent data stays unacknowledged
	// this long (a reply to a client that vanished).
	UserTimeout time.Duration
	// ClientCheck is how often a backend busy in a statement (waiting for
	// a lock) checks that its client is still connected.
	ClientCheck time.Duration
}

// LockTimeouts are the lock server's timeouts for a lease of ttl: a
// session that has been silent for one ttl is ended, so a lost client's
// advisory lock is released about one ttl after its last keepalive (sent
// every ttl/3) reached the server.
func LockTimeouts(ttl time.Duration) Timeouts {
	return Timeouts{
		IdleSession:        ttl,
		KeepalivesIdle:     wholeSeconds(ttl / 3),
		KeepalivesInterval: time.Second,
		KeepalivesCount:    2,
		UserTimeout:        ttl,
		ClientCheck:        max(ttl/4, 100*time.Millisecond),
	}
}

// StorageTimeouts are the storage server's: no idle limit (its clients
// keep pooled connections open), the same network probes.
func StorageTimeouts(ttl time.Duration) Timeouts {
	t := LockTimeouts(ttl)
	t.IdleSession = 0
	return t
}

// wholeSeconds rounds d to whole seconds, at least one: the keepalive
// settings take seconds.
func wholeSeconds(d time.Duration) time.Duration {
	return max(d.Round(time.Second), time.Second)
}

// Conf is the text appended to postgresql.conf: later settings win over
// initdb's.
func (t Timeouts) Conf() string {
	ms := func(d time.Duration) string { return fmt.Sprintf("'%dms'", d.Milliseconds()) }
	lines := []string{
		"# fencecheck",
		"listen_addresses = '*'",
		fmt.Sprintf("port = %d", Port),
		fmt.Sprintf("unix_socket_directories = '%s'", SocketDir),
		"max_connections = 500",
		"shared_buffers = '64MB'",
		// Durable commits: a grant or a write acknowledged before a
		// kill survives it.
		"fsync = on",
		"synchronous_commit = on",
		"full_page_writes = on",
		"password_encryption = 'scram-sha-256'",
		// The log goes to stderr, which StartDaemon sends to
		// backends.LogDir/postgres.log. Ended sessions are logged with
		// their application name (the client's holder id), so the log
		// tells which session the server dropped and why.
		"logging_collector = off",
		"log_line_prefix = '%m [%p] %q%a '",
		"log_disconnections = on",
		"idle_session_timeout = " + ms(t.IdleSession),
		fmt.Sprintf("tcp_keepalives_idle = %d", int(t.KeepalivesIdle.Seconds())),
		fmt.Sprintf("tcp_keepalives_interval = %d", int(t.KeepalivesInterval.Seconds())),
		fmt.Sprintf("tcp_keepalives_count = %d", t.KeepalivesCount),
		"tcp_user_timeout = " + ms(t.UserTimeout),
		"client_connection_check_interval = " + ms(t.ClientCheck),
	}
	return strings.Join(lines, "\n") + "\n"
}

// HBA is the whole pg_hba.conf: the superuser through the local socket
// (for the harness's own pg_isready and psql, by peer authentication),
// and over TCP from the test's network only, with the password.
func HBA(subnet string) string {
	return fmt.Sprintf("# fencecheck\nlocal all %[1]s peer\nhost all %[1]s %[2]s scram-sha-256\n", User, subnet)
}

// Subnet is the network of addr/prefix, as in "172.20.0.3/16" →
// "172.20.0.0/16".
func Subnet(cidr string) (string, error) {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		return "", err
	}
	return n.String(), nil
}

// server is one PostgreSQL server in a node: initdb'd as user postgres
// into DataDir, password-protected, reachable over TCP from the test's
// network only, run as a daemon so it can be SIGKILLed.
type server struct {
	node     string
	secret   string
	timeouts Timeouts
	conf     string // more postgresql.conf lines (durability settings)
	schema   string // SQL run once the server answers
	version  string
}

// nodeSubnet is the subnet of node's address on the test network, as the
// node itself sees it.
func nodeSubnet(ctx context.Context, c nodes.Nodes, node string) (string, error) {
	n, err := c.Node(node)
	if err != nil {
		return "", err
	}
	res, err := c.Exec(ctx, node, []string{"ip", "-o", "-4", "addr", "show"})
	if err != nil {
		return "", err
	}
	for _, f := range strings.Fields(res.Stdout) {
		if strings.HasPrefix(f, n.IP+"/") {
			return Subnet(f)
		}
	}
	return "", fmt.Errorf("no address %s in %s: %s", n.IP, node, strings.TrimSpace(res.Stdout+res.Stderr))
}

// run runs a shell script in the node, as user ("" for root), with stdin,
// and fails on a non-zero exit. Its output goes into the error: no script
// here prints the password.
func run(ctx context.Context, c nodes.Nodes, node, user, stdin, script string) error {
	opts := nodes.ExecOptions{User: user}
	if stdin != "" {
		opts.Stdin = strings.NewReader(stdin)
	}
	res, err := c.ExecWith(ctx, node, []string{"sh", "-c", script}, opts)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("in %s: `%s` exited %d: %s", node, firstLine(script), res.ExitCode, strings.TrimSpace(res.Stdout+"\n"+res.Stderr))
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// setup makes the server's files, starts it, waits until it accepts
// connections and creates the schema.
func (s *server) setup(ctx context.Context, c nodes.Nodes) error {
	subnet, err := nodeSubnet(ctx, c, s.node)
	if err != nil {
		return fmt.Errorf("postgres in %s: the test network's subnet: %w", s.node, err)
	}
	// Root makes the directories postgres may not: the data directory's
	// parent, and the daemon's log and pid files in the shared log
	// directory.
	err = run(ctx, c, s.node, "", "", fmt.Sprintf(
		"mkdir -p %[1]s %[5]s %[2]s && chown %[3]s: %[1]s %[5]s && chmod 700 %[1]s %[5]s && "+
			"touch %[2]s/%[4]s.log %[2]s/%[4]s.pid && chown %[3]s: %[2]s/%[4]s.log %[2]s/%[4]s.pid",
		DataDir, backends.LogDir, User, daemon, pwDir))
	if err != nil {
		return err
	}
	// The password reaches initdb through a file only postgres can read,
	// written from stdin and removed at once: never on a command line,
	// never in SQL the server could log.
	pwfile := pwDir + "/pwfile"
	err = run(ctx, c, s.node, User, s.secret+"\n", fmt.Sprintf(
		"umask 077 && cat > %[1]s && %[2]s/initdb -D %[3]s -U %[4]s --pwfile=%[1]s -E UTF8 --locale=C "+
			"--auth-local=peer --auth-host=scram-sha-256 >/dev/null; rc=$?; rm -f %[1]s; exit $rc",
		pwfile, BinDir, DataDir, User))
	if err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	if err := run(ctx, c, s.node, User, s.timeouts.Conf()+s.conf, fmt.Sprintf("cat >> %[1]s/postgresql.conf && sync %[1]s/postgresql.conf", DataDir)); err != nil {
		return err
	}
	if err := run(ctx, c, s.node, User, HBA(subnet), fmt.Sprintf("cat > %[1]s/pg_hba.conf && sync %[1]s/pg_hba.conf", DataDir)); err != nil {
		return err
	}
	if err := s.start(ctx, c); err != nil {
		return err
	}
	if err := s.waitReady(ctx, c); err != nil {
		return err
	}
	if err := s.psql(ctx, c, s.schema); err != nil {
		return fmt.Errorf("creating the schema: %w", err)
	}
	res, err := c.Exec(ctx, s.node, []string{BinDir + "/postgres", "--version"})
	if err == nil {
		s.version = strings.TrimSpace(strings.TrimPrefix(res.Stdout, "postgres (PostgreSQL) "))
	}
	return nil
}

// start runs the postmaster as a daemon. A postmaster killed with SIGKILL
// leaves its backends behind for a moment (they exit when they notice);
// a new one refuses to start while they hold the old shared memory, so
// start waits for them first.
func (s *server) start(ctx context.Context, c nodes.Nodes) error {
	err := backends.WaitUntil(ctx, c, s.node, daemon,
		[]string{"sh", "-c", fmt.Sprintf("! pgrep -u %s -x postgres >/dev/null", User)}, 30*time.Second)
	if err != nil {
		return fmt.Errorf("the killed server's processes are still there: %w", err)
	}
	return backends.StartDaemon(ctx, c, s.node, daemon,
		[]string{BinDir + "/postgres", "-D", DataDir}, nodes.ExecOptions{User: User})
}

// waitReady waits until the server accepts connections. pg_isready only
// asks, but it asks as a user: as postgres over the socket, which the
// peer rule admits, it leaves no failed login in the server's log.
func (s *server) waitReady(ctx context.Context, c nodes.Nodes) error {
	return backends.WaitUntil(ctx, c, s.node, daemon,
		[]string{"runuser", "-u", User, "--", BinDir + "/pg_isready", "-q", "-h", SocketDir, "-p", fmt.Sprint(Port),
			"-U", User, "-d", Database, "-t", "2"}, 60*time.Second)
}

// psql runs SQL as the superuser over the local socket.
func (s *server) psql(ctx context.Context, c nodes.Nodes, sql string) error {
	return run(ctx, c, s.node, User, sql, fmt.Sprintf("%s/psql -X -q -v ON_ERROR_STOP=1 -h %s -p %d -d %s -f -",
		BinDir, SocketDir, Port, Database))
}

func (s *server) kill(ctx context.Context, c nodes.Nodes) error {
	return backends.KillDaemon(ctx, c, s.node, daemon)
}

// url is what clients connect to; it carries no password.
func (s *server) url() string {
	return fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable", User, s.node, Port, Database)
}
