// Package redis tests locks built on Redis: the single-instance recipe
// (SET key <random> NX PX ttl, renewed and released by Lua scripts that
// check the random value), the same with a counter INCRed by the acquire
// script as a fencing token, and Redlock over five independent masters.
// The single-instance recipes run on one master, or (--redis-topology
// sentinel) on a master with two replicas and three Sentinels that fail
// over, found through the Sentinels as users' clients find it.
// It starts redis-server (and redis-sentinel) on the server nodes and
// speaks to them with go-redis. It must never keep the protected resource in Redis, nor hand
// out a token the servers did not produce.
package redis

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// Port is where redis-server listens in its node.
const Port = 6379

// DataDir is where redis-server keeps its RDB snapshots and AOF files.
const DataDir = "/var/lib/fencecheck/redis"

// The recipes.
const (
	SetNX     = "setnx"      // SET NX PX on one master, no token
	SetNXIncr = "setnx-incr" // the same, the acquire script INCRs a token
	Redlock   = "redlock"    // five independent masters, quorum three, no token
	// SetNXIncrWait is setnx-incr followed by WAIT 1 <TTL/4>, as users who
	// want the lock on a replica before they go on write it: a grant that
	// fewer than one replica acknowledged in time is released and fails.
	SetNXIncrWait = "setnx-incr-wait"
)

// Recipes lists the recipes; the first is the default.
var Recipes = []string{SetNX, SetNXIncr, Redlock, SetNXIncrWait}

// Servers is how many independent masters a recipe runs on.
func Servers(recipe string) (int, error) {
	switch recipe {
	case SetNX, SetNXIncr, SetNXIncrWait:
		return 1, nil
	case Redlock:
		return 5, nil
	}
	return 0, fmt.Errorf("unknown Redis recipe %q (accepted: %s)", recipe, strings.Join(Recipes, ", "))
}

// Persistences are the accepted persistence settings. "default" (or "")
// is redis-server's own: appendonly no, RDB snapshots after 3600 s and 1
// change, 300 s and 100 changes, 60 s and 10000 changes — what Debian
// ships in /etc/redis/redis.conf too.
var Persistences = []string{"default", "none", "aof-everysec", "aof-always"}

// persistenceArgs are the redis-server arguments of a persistence setting.
func persistenceArgs(p string) ([]string, error) {
	switch p {
	case "", "default":
		return nil, nil
	case "none":
		return []string{"--save", "", "--appendonly", "no"}, nil
	case "aof-everysec":
		return []string{"--appendonly", "yes", "--appendfsync", "everysec"}, nil
	case "aof-always":
		return []string{"--appendonly", "yes", "--appendfsync", "always"}, nil
	}
	return nil, fmt.Errorf("unknown Redis persistence %q (accepted: %s)", p, strings.Join(Persistences, ", "))
}

// CheckPersistence says whether p is an accepted persistence setting.
func CheckPersistence(p string) error {
	_, err := persistenceArgs(p)
	return err
}

// DB runs redis-server on the server nodes. In the single topology each is
// an independent master: one node for the setnx recipes, five for
// redlock, or as many as a --client program asked for, and nothing
// replicates. In the sentinel topology n1 starts as the master of n2 and
// n3, with a Sentinel beside each server.
type DB struct {
	// Recipe is fencecheck's own recipe; "" for a --client program, which
	// gets Masters servers.
	Recipe  string
	Masters int
	// Persistence is one of Persistences; "" is the server's default.
	Persistence string
	// Topology is one of Topologies; "" is Single.
	Topology string
	// Sentinel are the sentinel topology's settings.
	Sentinel SentinelSettings

	// master is the node that was master when the servers last started
	// (n1 at setup); sentinelsUp says the Sentinels run, and Start asks
	// them for the master instead.
	master      string
	sentinelsUp bool

	nodes   []string
	ips     map[string]string
	version string
	image   string // the user's server image (--server-image), "" for the node image's Redis
}

func (d *DB) Setup(ctx context.Context, c nodes.Nodes, servers []string) error {
	want := d.Masters
	if d.Topology == Sentinel {
		want = SentinelServers
	} else if d.Recipe != "" {
		n, err := Servers(d.Recipe)
		if err != nil {
			return err
		}
		want = n
	}
	if err := CheckPersistence(d.Persistence); err != nil {
		return err
	}
	if len(servers) != want {
		return fmt.Errorf("%s runs on %d Redis masters, got %d nodes", d.what(), want, len(servers))
	}
	d.nodes = servers
	d.image = nodes.ServerImage(c)
	ips, err := backends.NodeIPs(c, servers)
	if err != nil {
		return err
	}
	d.ips = ips
	if d.Topology == Sentinel {
		if d.image != "" {
			return fmt.Errorf("the sentinel topology runs Debian's redis-sentinel beside each server; it cannot run from --server-image")
		}
		if err := d.setupSentinel(ctx, c); err != nil {
			return err
		}
		d.sentinelsUp = true
	} else if err := backends.OnEachNode(servers, func(_ int, n string) error { return d.setupNode(ctx, c, n) }); err != nil {
		return err
	}
	if d.image != "" {
		return nil // the servers' own answer (AskVersion) names the image's release
	}
	res, err := c.Exec(ctx, servers[0], []string{"redis-server", "--version"})
	if err == nil {
		if m := regexp.MustCompile(`v=(\S+)`).FindStringSubmatch(res.Stdout); m != nil {
			d.version = m[1]
		}
	}
	return nil
}

func (d *DB) setupNode(ctx context.Context, c nodes.Nodes, n string) error {
	if d.image == "" {
		res, err := c.Exec(ctx, n, []string{"mkdir", "-p", DataDir, SentinelDir})
		if err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("creating %s in %s: %s", DataDir, n, res.Stderr)
		}
	}
	// From the node container either way: it shares the image-run
	// server's network namespace, and has redis-cli and a shell.
	if err := d.Start(ctx, c, n); err != nil {
		return err
	}
	// redis-cli exits 0 on an error reply (LOADING) too: compare the answer.
	probe := []string{"sh", "-c", fmt.Sprintf(`[ "$(redis-cli -h 127.0.0.1 -p %d ping)" = PONG ]`, Port)}
	return backends.WaitUntil(ctx, c, n, "redis", probe, 30*time.Second)
}

// Endpoints are the masters (redis://n1:6379), or in the sentinel
// topology the Sentinels (redis-sentinel://n1:26379/fencecheck: the path
// is the master's name).
func (d *DB) Endpoints() []string {
	var out []string
	for _, n := range d.nodes {
		if d.Topology == Sentinel {
			out = append(out, sentinelEndpoint(n))
			continue
		}
		out = append(out, fmt.Sprintf("redis://%s:%d", n, Port))
	}
	return out
}

// Start runs redis-server in the foreground, so that Kill's SIGKILL reaches
// the server itself, bound to the node's address on the test network and
// to 127.0.0.1 (for the readiness probe), with its data in DataDir.
func (d *DB) Start(ctx context.Context, c nodes.Nodes, node string) error {
	ip := d.ips[node]
	if ip == "" {
		return fmt.Errorf("no Redis server is set up in %s", node)
	}
	extra, err := persistenceArgs(d.Persistence)
	if err != nil {
		return err
	}
	dir := DataDir
	if d.image != "" {
		dir = ImageDataDir
	}
	cmd := append([]string{"redis-server",
		"--port", fmt.Sprint(Port),
		"--bind", ip, "127.0.0.1",
		"--protected-mode", "no",
		"--daemonize", "no",
		"--dir", dir,
		"--logfile", "",
	}, extra...)
	cmd = append(cmd, d.serverArgs(ctx, c, node)...)
	if d.image != "" {
		// The official image's entrypoint takes the command as given
		// (redis-server and its arguments), as its own CMD would be.
		is, err := nodes.ImageServersOf(c)
		if err != nil {
			return err
		}
		return is.StartImageServer(ctx, node, nodes.ImageServer{Cmd: cmd})
	}
	return backends.StartDaemon(ctx, c, node, "redis", cmd, nodes.ExecOptions{})
}

// ImageDataDir is where Redis keeps its data when it runs from the user's
// image: the official image's working directory and volume, /data.
const ImageDataDir = "/data"

func (d *DB) Kill(ctx context.Context, c nodes.Nodes, node string) error {
	if d.image != "" {
		is, err := nodes.ImageServersOf(c)
		if err != nil {
			return err
		}
		return is.KillImageServer(ctx, node)
	}
	return backends.KillDaemon(ctx, c, node, "redis")
}

// Primary is the only master of one; several masters (Redlock's) are
// peers, and none leads. In the sentinel topology it is the master the
// Sentinels name now (most of those that answer), whichever node that is
// after failovers.
func (d *DB) Primary(ctx context.Context, c nodes.Nodes) (string, error) {
	if d.Topology == Sentinel {
		return d.sentinelMaster(ctx, c)
	}
	if len(d.nodes) != 1 {
		return "", nil
	}
	return d.nodes[0], nil
}

// what names who uses the masters, for messages.
func (d *DB) what() string {
	if d.Recipe == "" {
		return "the --client program"
	}
	return "recipe " + d.Recipe
}

func (d *DB) LogFiles() []string { return []string{backends.LogDir} }

func (d *DB) Info() map[string]string {
	version := d.version
	if version == "" {
		version = "(version unknown)"
	}
	if d.image != "" {
		version = "from image " + d.image
	}
	p := d.Persistence
	switch p {
	case "", "default":
		p = "default (appendonly no, RDB snapshots)"
	case "none":
		p = "none (no RDB, no AOF)"
	}
	kind := "independent masters"
	if len(d.nodes) == 1 {
		kind = "one master"
	}
	info := map[string]string{
		"redis persistence": p,
	}
	if d.Topology == Sentinel {
		kind = fmt.Sprintf("a master (%s at the start) and two replicas with a Sentinel each (quorum %d)", d.nodes[0], Quorum)
		s := d.Sentinel
		info["redis sentinel"] = fmt.Sprintf("down-after-milliseconds %d, failover-timeout %d; min-replicas-to-write %d",
			s.DownAfter.Milliseconds(), s.FailoverTimeout.Milliseconds(), s.MinReplicas)
	}
	info["lock service"] = fmt.Sprintf("Redis %s, %s on %s, for %s", version, kind, strings.Join(d.nodes, ", "), d.what())
	return info
}

// VersionQuery says how AskVersion asks.
const VersionQuery = "INFO server on each server (redis_version)"

// AskVersion asks node's server with INFO server and keeps its
// redis_version field.
func (d *DB) AskVersion(ctx context.Context, c nodes.Nodes, node string) (backends.ServerVersion, error) {
	out, err := backends.AskInNode(ctx, c, node, []string{"redis-cli", "-h", "127.0.0.1", "-p", fmt.Sprint(Port), "INFO", "server"})
	if err != nil {
		return backends.ServerVersion{}, err
	}
	return parseInfoVersion(node, out)
}

func parseInfoVersion(node, out string) (backends.ServerVersion, error) {
	m := redisVersion.FindStringSubmatch(out)
	if m == nil {
		return backends.ServerVersion{}, fmt.Errorf("%s: INFO server has no redis_version: %q", node, strings.TrimSpace(out))
	}
	v := strings.TrimSpace(m[1])
	return backends.ServerVersion{Answer: v, Version: v}, nil
}

var redisVersion = regexp.MustCompile(`(?m)^redis_version:(.*)$`)

// ClockCommand prints the server's own wall clock (TIME) as Unix seconds,
// for the clock faults, which check that a moved clock moved.
func (d *DB) ClockCommand(string) (cmd, what string) {
	return fmt.Sprintf(`redis-cli -h 127.0.0.1 -p %d TIME | awk 'NR == 1 { s = $1 } NR == 2 { printf "%%d.%%06d\n", s, $1 }'`, Port), "Redis TIME"
}
