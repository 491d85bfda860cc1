// Package zookeeper tests ZooKeeper's lock: an ensemble of Debian's
// ZooKeeper 3.8 on the server nodes, the standard ephemeral-sequential
// znode lock recipe written out over go-zookeeper/zk, the session as the
// lease, and the holder's lock znode's czxid as the fencing token. The
// resource is always the shared fenced storage node: ZooKeeper has no
// guarded write the lock could protect it with. The package knows nothing
// about histories or faults; it never decides an op's outcome by guessing.
package zookeeper

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// Ports ZooKeeper listens on in its nodes.
const (
	ClientPort   = 2181
	QuorumPort   = 2888
	ElectionPort = 3888
)

// Paths in the server nodes.
const (
	DataDir = "/var/lib/fencecheck/zookeeper"
	ConfDir = "/etc/fencecheck/zookeeper"
	// daemon names the server for backends.StartDaemon: its log is
	// backends.LogDir/zookeeper.log.
	daemon = "zookeeper"
)

// classpath is Debian's server jar (its manifest names every dependency)
// and SLF4J's simple binding: Debian's zookeeper package ships no binding,
// so without one the server logs nothing. slf4j-simple (from
// libslf4j-java, already in the image) writes to stderr, which
// StartDaemon sends to the server's log file.
const classpath = "/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"

// MinTick is the shortest tickTime used: a tick drives the servers'
// heartbeats (every half tick) and session expiry, and a shorter one buys
// nothing but load on small machines.
const MinTick = 100 * time.Millisecond

// MinTTL is the shortest lease the mapping honours exactly: ZooKeeper
// grants no session shorter than two ticks.
const MinTTL = 2 * MinTick

// Timing is a requested lease mapped onto ZooKeeper's clock. The session
// timeout is the lease: a client whose session the leader has not heard
// from for that long loses it, and with it its ephemeral lock znode.
// ZooKeeper grants a session timeout only within [2, 20] × tickTime
// (minSessionTimeout and maxSessionTimeout at their defaults), so the tick
// is chosen from the lease: a tenth of it (the leader expires sessions in
// tick-sized buckets, so a session ends between Session and Session +
// Tick after its last heartbeat), at least MinTick, and large enough for
// Session to fit under 20 ticks.
type Timing struct {
	Tick    time.Duration // tickTime
	Session time.Duration // the session timeout clients ask for, in whole ms
	// InitLimit and SyncLimit are in ticks: how long a follower may take
	// to sync with a new leader, and to answer it afterwards (at least 10 s
	// and 2 s whatever the tick, and never below ZooKeeper's defaults of
	// 10 and 5 ticks).
	InitLimit, SyncLimit int
	// Clamped: the lease was below MinTTL and Session is MinTTL.
	Clamped bool
}

// TimingFor maps a requested lease onto tickTime and a session timeout.
func TimingFor(ttl time.Duration) Timing {
	var t Timing
	t.Session = ceilMs(ttl)
	if t.Session < MinTTL {
		t.Session, t.Clamped = MinTTL, true
	}
	t.Tick = (t.Session / 10).Truncate(time.Millisecond)
	t.Tick = max(t.Tick, MinTick)
	if t.Tick > 2*time.Second {
		// ZooKeeper's default tick; beyond 40 s the tick grows only as
		// far as the session needs.
		t.Tick = max(2*time.Second, ceilMs((t.Session+19)/20))
	}
	t.InitLimit = max(10, ticks(10*time.Second, t.Tick))
	t.SyncLimit = max(5, ticks(2*time.Second, t.Tick))
	return t
}

// ceilMs rounds d up to whole milliseconds, ZooKeeper's unit.
func ceilMs(d time.Duration) time.Duration {
	r := d.Truncate(time.Millisecond)
	if r < d {
		r += time.Millisecond
	}
	return r
}

func ticks(d, tick time.Duration) int { return int((d + tick - 1) / tick) }

// Granted is the session timeout a server answering per zoo.cfg's bounds
// grants for a requested one.
func (t Timing) Granted(requested time.Duration) time.Duration {
	return min(max(requested, 2*t.Tick), 20*t.Tick)
}

// Config renders zoo.cfg for the ensemble of nodes.
func (t Timing) Config(nodes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Written by fencecheck: tickTime from --lease-ttl (session timeout %d ms).\n", t.Session.Milliseconds())
	fmt.Fprintf(&b, "tickTime=%d\n", t.Tick.Milliseconds())
	fmt.Fprintf(&b, "initLimit=%d\n", t.InitLimit)
	fmt.Fprintf(&b, "syncLimit=%d\n", t.SyncLimit)
	fmt.Fprintf(&b, "dataDir=%s\n", DataDir)
	fmt.Fprintf(&b, "clientPort=%d\n", ClientPort)
	b.WriteString("4lw.commands.whitelist=srvr,mntr,ruok\n")
	b.WriteString("admin.enableServer=false\n")
	for i, n := range nodes {
		fmt.Fprintf(&b, "server.%d=%s:%d:%d\n", i+1, n, QuorumPort, ElectionPort)
	}
	return b.String()
}

// DB runs a ZooKeeper ensemble on the server nodes.
type DB struct {
	TTL time.Duration
	// NoForceSync writes forceSync=no into zoo.cfg.
	NoForceSync bool

	timing Timing
	nodes  []string
	ips    map[string]string

	mu      sync.Mutex
	version string
	granted string // what the servers granted a probe session, for Info
}

func (d *DB) Setup(ctx context.Context, c nodes.Nodes, nodes []string) error {
	d.timing = TimingFor(d.TTL)
	d.nodes = nodes
	ips, err := backends.NodeIPs(c, nodes)
	if err != nil {
		return err
	}
	d.ips = ips
	conf := d.timing.Config(nodes)
	if d.NoForceSync {
		conf += "forceSync=no\n"
	}
	cfg := []byte(conf)
	errs := make(chan error, len(nodes))
	for i, n := range nodes {
		go func() {
			res, err := c.Exec(ctx, n, []string{"mkdir", "-p", DataDir, ConfDir, backends.LogDir})
			if err == nil && res.ExitCode != 0 {
				err = fmt.Errorf("mkdir in %s: %s", n, res.Stderr)
			}
			if err == nil {
				err = c.CopyTo(ctx, n, ConfDir+"/zoo.cfg", cfg, 0o644)
			}
			if err == nil {
				// Through an exec, not Docker's copy: the copy writes
				// beneath a filesystem mounted in the node (the power
				// faults' layer over DataDir); and synced, as a
				// provisioned server's files are long before any power
				// cut (the layer never writes back on its own).
				res, err = c.Exec(ctx, n, []string{"sh", "-c", fmt.Sprintf("echo %d > %[2]s/myid && sync %[2]s/myid", i+1, DataDir)})
				if err == nil && res.ExitCode != 0 {
					err = fmt.Errorf("writing myid in %s: %s", n, res.Stderr)
				}
			}
			if err == nil {
				err = d.Start(ctx, c, n)
			}
			errs <- err
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			return err
		}
	}
	// Every server in the ensemble, leading or following: a quorum
	// serves, and no server is still catching up when the clients start.
	for _, n := range nodes {
		if err := backends.WaitUntil(ctx, c, n, daemon, srvrProbe(`^Mode: (leader|follower)$`), 90*time.Second); err != nil {
			return err
		}
	}
	if v, err := d.AskVersion(ctx, c, nodes[0]); err == nil {
		d.mu.Lock()
		d.version = v.Version
		d.mu.Unlock()
	}
	return d.observeSession(ctx)
}

// observeSession opens one session from the host, as a client would, and
// notes the timeout the ensemble granted. A grant other than the one the
// mapping expects would make every lease in the run a different length
// from the one asked for; that is a setup error. A host that cannot reach
// the nodes (the clients, in their containers, still can) only leaves the
// grant unobserved.
func (d *DB) observeSession(ctx context.Context) error {
	var servers []string
	for _, n := range d.nodes {
		servers = append(servers, fmt.Sprintf("%s:%d", d.ips[n], ClientPort))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := dial(ctx, servers, d.timing.Session)
	d.mu.Lock()
	defer d.mu.Unlock()
	if err != nil {
		d.granted = fmt.Sprintf("%d ms requested; the grant was not observed from the host (%v)", d.timing.Session.Milliseconds(), err)
		return nil
	}
	defer s.close()
	g := s.grantedTimeout(ctx)
	if g == 0 {
		d.granted = fmt.Sprintf("%d ms requested; the grant was not observed", d.timing.Session.Milliseconds())
		return nil
	}
	d.granted = fmt.Sprintf("%d ms granted (requested %d ms; tickTime %d ms, so a session ends %d to %d ms after its last heartbeat)",
		g.Milliseconds(), d.timing.Session.Milliseconds(), d.timing.Tick.Milliseconds(), g.Milliseconds(), (g + d.timing.Tick).Milliseconds())
	if g != d.timing.Session {
		return fmt.Errorf("the ensemble granted a %s session for a requested %s (tickTime %s): the lease would not be the one asked for",
			g, d.timing.Session, d.timing.Tick)
	}
	return nil
}

// Timing is the mapping Setup configured the ensemble with.
func (d *DB) Timing() Timing { return d.timing }

// Command is the server's command line in a node: java directly, so that
// the pid StartDaemon records is the JVM's and Kill is a real SIGKILL.
func Command() []string {
	return []string{"java",
		"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Djava.net.preferIPv4Stack=true",
		"-Dorg.slf4j.simpleLogger.showDateTime=true",
		"-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss.SSS",
		"-cp", classpath,
		"org.apache.zookeeper.server.quorum.QuorumPeerMain", ConfDir + "/zoo.cfg"}
}

func (d *DB) Endpoints() []string {
	var out []string
	for _, n := range d.nodes {
		out = append(out, fmt.Sprintf("%s:%d", n, ClientPort))
	}
	return out
}

// Start runs the server in node with the data it has: the nemesis restarts
// a killed server this way.
func (d *DB) Start(ctx context.Context, c nodes.Nodes, node string) error {
	return backends.StartDaemon(ctx, c, node, daemon, Command(), nodes.ExecOptions{})
}

func (d *DB) Kill(ctx context.Context, c nodes.Nodes, node string) error {
	return backends.KillDaemon(ctx, c, node, daemon)
}

// srvrProbe is a command that exits 0 when the local server's srvr answer
// has a line matching re. The image has no nc: bash's /dev/tcp does.
func srvrProbe(re string) []string {
	return []string{"timeout", "5", "bash", "-c",
		fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && printf srvr >&3 && grep -qE '%s' <&3`, ClientPort, re)}
}

// srvr is the local server's answer to the srvr four-letter word.
func srvr(ctx context.Context, c nodes.Nodes, node string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	res, err := c.Exec(ctx, node, []string{"timeout", "4", "bash", "-c",
		fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && printf srvr >&3 && cat <&3`, ClientPort)})
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("srvr in %s: exit %d: %s", node, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return res.Stdout, nil
}

var leaderLine = regexp.MustCompile(`(?m)^Mode: leader$`)

// VersionQuery says how AskVersion asks.
const VersionQuery = "the srvr four-letter word on each server's client port (its Zookeeper version line)"

// AskVersion asks node's server with srvr. Its "Zookeeper version:" line
// is kept verbatim — Debian's build answers "3.8.0-${mvngit.commit.id},
// built on …", its build never having filled the placeholder in — and
// the version is the release at its start.
func (d *DB) AskVersion(ctx context.Context, c nodes.Nodes, node string) (backends.ServerVersion, error) {
	out, err := srvr(ctx, c, node)
	if err != nil {
		return backends.ServerVersion{}, err
	}
	return parseSrvrVersion(node, out)
}

func parseSrvrVersion(node, out string) (backends.ServerVersion, error) {
	m := versionLine.FindStringSubmatch(out)
	if m == nil {
		return backends.ServerVersion{}, fmt.Errorf("%s: srvr has no version line: %q", node, out)
	}
	answer := strings.TrimSpace(m[1])
	v := backends.Release(answer)
	if v == "" {
		v = answer
	}
	return backends.ServerVersion{Answer: answer, Version: v}, nil
}

var versionLine = regexp.MustCompile(`(?m)^Zookeeper version: (.*)$`)

// Primary asks every server, from inside its node, whether it leads. A
// leader cut off from its quorum stops serving within syncLimit ticks and
// answers srvr with "not currently serving requests".
func (d *DB) Primary(ctx context.Context, c nodes.Nodes) (string, error) {
	var errs []string
	for _, n := range d.nodes {
		out, err := srvr(ctx, c, n)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if leaderLine.MatchString(out) {
			return n, nil
		}
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("no ZooKeeper server says it leads (%s)", strings.Join(errs, "; "))
	}
	return "", fmt.Errorf("no ZooKeeper server says it leads")
}

// LogFiles: the servers' logs, and the zoo.cfg they ran with.
func (d *DB) LogFiles() []string { return []string{backends.LogDir, ConfDir} }

func (d *DB) Info() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	version := d.version
	if version == "" {
		version = "3.8"
	}
	info := map[string]string{
		"lock service": fmt.Sprintf("ZooKeeper %s (Debian, java) on %s", version, strings.Join(d.nodes, ", ")),
		"zookeeper timing": fmt.Sprintf("tickTime %d ms, initLimit %d, syncLimit %d", d.timing.Tick.Milliseconds(),
			d.timing.InitLimit, d.timing.SyncLimit),
	}
	if d.granted != "" {
		info["session timeout"] = d.granted
	}
	return info
}
