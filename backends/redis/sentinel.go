package redis

// The sentinel topology: Redis as most people deploy it. One master and
// two replicas on n1–n3, replicating asynchronously, and a Sentinel
// beside each server (quorum 2) that promotes a replica when the master
// stops answering. Clients find the master through the Sentinels, as
// go-redis's failover client does. Nothing here makes the lock safer than
// the servers make it: a write the old master acknowledged and never
// shipped to the replica that takes over is gone after the promotion.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// The backend's flags for the topology.
const (
	TopologyFlag        = "redis-topology"
	DownAfterFlag       = "redis-down-after"
	FailoverTimeoutFlag = "redis-failover-timeout"
	MinReplicasFlag     = "redis-min-replicas"
)

// Topologies.
const (
	Single   = "single"   // independent masters, nothing replicates (today's)
	Sentinel = "sentinel" // one master, two replicas, three Sentinels
)

// Topologies lists the accepted --redis-topology values, the default first.
var Topologies = []string{Single, Sentinel}

// The sentinel topology's shape and its defaults.
const (
	// SentinelPort is where each Sentinel listens, beside its server.
	SentinelPort = 26379
	// MasterName is the name the Sentinels monitor the master under: what
	// a client asks them for.
	MasterName = "fencecheck"
	// SentinelServers is the number of server nodes: a master and two
	// replicas, a Sentinel beside each.
	SentinelServers = 3
	// Quorum is how many Sentinels must agree that the master is down.
	Quorum = 2
	// DefaultDownAfter is how long the master must stay silent before a
	// Sentinel calls it down (Sentinel's own default is 30 s): a second,
	// shorter than the default pause and partition (twice the lease), so
	// a fault of the usual length ends in a failover, and long enough
	// that a loaded machine's scheduling hiccups do not.
	DefaultDownAfter = time.Second
	// DefaultFailoverTimeout bounds one failover (Sentinel's default is
	// 3 min): a failover that did not finish in it is retried after twice
	// it. Three seconds lets a failover retried after an aborted election
	// still happen within a test.
	DefaultFailoverTimeout = 3 * time.Second
	// SentinelDir is where each Sentinel keeps its configuration file,
	// which it rewrites as it learns the others and each failover.
	SentinelDir = backends.DataRoot + "/redis-sentinel"
	// minReplicasMaxLag is min-replicas-max-lag (seconds) with
	// --redis-min-replicas: a replica counts as good when its last
	// acknowledgement (one a second) is at most this old. Redis's default
	// is 10 s; 2 s is the shortest that one late acknowledgement does not
	// trip.
	minReplicasMaxLag = 2
)

// CheckTopology says whether t is an accepted topology.
func CheckTopology(t string) error {
	if t == "" || slices.Contains(Topologies, t) {
		return nil
	}
	return fmt.Errorf("unknown Redis topology %q (accepted: %s)", t, strings.Join(Topologies, ", "))
}

// checkMillis checks a Sentinel duration flag: a Go duration of at least
// 100 ms, in whole milliseconds (Sentinel takes milliseconds).
func checkMillis(v string) error {
	if v == "" {
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("not a duration: %q (e.g. 1s, 500ms)", v)
	}
	if d < 100*time.Millisecond || d%time.Millisecond != 0 {
		return fmt.Errorf("%s: give at least 100ms, in whole milliseconds", v)
	}
	return nil
}

// CheckMinReplicas checks --redis-min-replicas: 0, 1 or 2 (there are two
// replicas).
func CheckMinReplicas(v string) error {
	if v == "" {
		return nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > SentinelServers-1 {
		return fmt.Errorf("%q: give 0, 1 or 2 (the sentinel topology has two replicas)", v)
	}
	return nil
}

// SentinelSettings are the sentinel topology's settings.
type SentinelSettings struct {
	DownAfter       time.Duration
	FailoverTimeout time.Duration
	// MinReplicas is min-replicas-to-write on every server (0: off).
	MinReplicas int
}

// sentinelSettings reads the flags (checked already) with their defaults.
func sentinelSettings(opts map[string]string) SentinelSettings {
	s := SentinelSettings{DownAfter: DefaultDownAfter, FailoverTimeout: DefaultFailoverTimeout}
	if d, err := time.ParseDuration(opts[DownAfterFlag]); err == nil {
		s.DownAfter = d
	}
	if d, err := time.ParseDuration(opts[FailoverTimeoutFlag]); err == nil {
		s.FailoverTimeout = d
	}
	s.MinReplicas, _ = strconv.Atoi(opts[MinReplicasFlag])
	return s
}

// sentinelConf is a Sentinel's configuration: it monitors the master at
// masterIP, and takes a failover to quorum 2.
func (d *DB) sentinelConf(ip, masterIP string) string {
	s := d.Sentinel
	m := MasterName
	return fmt.Sprintf("port %d\nbind %s 127.0.0.1\nprotected-mode no\ndaemonize no\nlogfile \"\"\ndir %s\n", SentinelPort, ip, SentinelDir) +
		fmt.Sprintf("sentinel monitor %s %s %d %d\n", m, masterIP, Port, Quorum) +
		fmt.Sprintf("sentinel down-after-milliseconds %s %d\n", m, s.DownAfter.Milliseconds()) +
		fmt.Sprintf("sentinel failover-timeout %s %d\n", m, s.FailoverTimeout.Milliseconds()) +
		fmt.Sprintf("sentinel parallel-syncs %s 1\n", m)
}

// setupSentinel starts the servers, n1 the master and the others its
// replicas, waits until both replicas are in sync, then starts a Sentinel
// on every node and waits until each has found the others and the
// replicas.
func (d *DB) setupSentinel(ctx context.Context, c nodes.Nodes) error {
	d.master = d.nodes[0]
	if err := backends.OnEachNode(d.nodes, func(_ int, n string) error { return d.setupNode(ctx, c, n) }); err != nil {
		return err
	}
	synced := []string{"sh", "-c", fmt.Sprintf(`redis-cli -h 127.0.0.1 -p %d INFO replication | grep -c '^slave[0-9]*:.*state=online' | grep -qx %d`, Port, len(d.nodes)-1)}
	if err := backends.WaitUntil(ctx, c, d.master, "redis", synced, 30*time.Second); err != nil {
		return fmt.Errorf("the replicas did not reach the master: %w", err)
	}
	masterIP := d.ips[d.master]
	if err := backends.OnEachNode(d.nodes, func(_ int, n string) error {
		conf := SentinelDir + "/sentinel.conf"
		if err := c.CopyTo(ctx, n, conf, []byte(d.sentinelConf(d.ips[n], masterIP)), 0o644); err != nil {
			return fmt.Errorf("writing %s in %s: %w", conf, n, err)
		}
		return backends.StartDaemon(ctx, c, n, "redis-sentinel", []string{"redis-sentinel", conf}, nodes.ExecOptions{})
	}); err != nil {
		return err
	}
	// Ready: each Sentinel sees a quorum of Sentinels able to authorise a
	// failover, and both replicas.
	probe := []string{"sh", "-c", fmt.Sprintf(`redis-cli -p %[1]d SENTINEL CKQUORUM %[2]s | grep -q '^OK 3 ' && [ "$(redis-cli -p %[1]d SENTINEL REPLICAS %[2]s | grep -cx name)" = %[3]d ]`,
		SentinelPort, MasterName, len(d.nodes)-1)}
	return backends.OnEachNode(d.nodes, func(_ int, n string) error {
		return backends.WaitUntil(ctx, c, n, "redis-sentinel", probe, 30*time.Second)
	})
}

// serverArgs are a server's topology arguments: in the sentinel topology
// a node that is not the master now starts as the master's replica (a
// restarted node comes back as what Sentinel last made it, as a server
// whose configuration file Sentinel rewrote would), and every server
// refuses writes without enough good replicas with --redis-min-replicas.
// A full resynchronisation starts at once (Redis waits 5 s for more
// replicas to share the transfer by default): setup is 5 s shorter, and a
// demoted master is a copy of the new one sooner.
func (d *DB) serverArgs(ctx context.Context, c nodes.Nodes, node string) []string {
	if d.Topology != Sentinel {
		return nil
	}
	args := []string{"--repl-diskless-sync-delay", "0"}
	if n := d.Sentinel.MinReplicas; n > 0 {
		args = append(args, "--min-replicas-to-write", fmt.Sprint(n), "--min-replicas-max-lag", fmt.Sprint(minReplicasMaxLag))
	}
	master := d.master
	if d.sentinelsUp {
		if m, err := d.sentinelMaster(ctx, c); err == nil && m != "" {
			master = m
		}
	}
	if master != node && d.ips[master] != "" {
		args = append(args, "--replicaof", d.ips[master], fmt.Sprint(Port))
	}
	return args
}

// sentinelMaster asks every node's Sentinel which node is the master and
// takes the answer most of those who answered gave. A Sentinel cut off
// with the old master still names it; the majority's answer is the one
// clients on the majority's side get. It asks up to three times, 300 ms
// apart (each Sentinel given 5 s: docker exec alone takes seconds on a
// loaded machine), before it says that no Sentinel named a master.
func (d *DB) sentinelMaster(ctx context.Context, c nodes.Nodes) (string, error) {
	var why []string
	for try := 0; try < 3; try++ {
		if try > 0 {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(300 * time.Millisecond):
			}
		}
		answers, errs := d.askSentinels(ctx, c)
		count := map[string]int{}
		best := ""
		for _, m := range answers {
			if m == "" {
				continue
			}
			count[m]++
			if count[m] > count[best] || (count[m] == count[best] && m < best) {
				best = m
			}
		}
		if best != "" {
			return best, nil
		}
		why = errs
	}
	return "", fmt.Errorf("no Sentinel named the master (%s)", strings.Join(why, "; "))
}

// askSentinels asks each node's Sentinel for the master's address, by
// node ("" where it did not answer, e.g. a paused node, and then why in
// errs).
func (d *DB) askSentinels(ctx context.Context, c nodes.Nodes) (masters map[string]string, errs []string) {
	masters = map[string]string{}
	var mu sync.Mutex
	_ = backends.OnEachNode(d.nodes, func(_ int, n string) error {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		res, err := c.Exec(qctx, n, []string{"redis-cli", "-p", fmt.Sprint(SentinelPort), "SENTINEL", "get-master-addr-by-name", MasterName})
		node, why := "", ""
		switch f := strings.Fields(res.Stdout); {
		case err != nil:
			why = err.Error()
		case res.ExitCode != 0 || len(f) != 2:
			why = fmt.Sprintf("answered %q, exit %d", strings.TrimSpace(res.Stdout+" "+res.Stderr), res.ExitCode)
		default:
			if node = d.nodeOf(f[0]); node == "" {
				why = "named " + f[0] + ", no node of this cluster"
			}
		}
		mu.Lock()
		defer mu.Unlock()
		masters[n] = node
		if why != "" {
			errs = append(errs, n+": "+why)
		}
		return nil
	})
	sort.Strings(errs)
	return masters, errs
}

// nodeOf names the node at ip ("" for none of ours).
func (d *DB) nodeOf(ip string) string {
	for n, a := range d.ips {
		if a == ip {
			return n
		}
	}
	return ""
}

// WatchLeader follows the Sentinels' pub/sub (+try-failover when a
// Sentinel starts a failover, +switch-master when the master changed)
// on every node until ctx ends, and calls moved once for each failover
// begun (begun true, the master being replaced) and each new master
// (begun false, the node promoted). A new master is reported when the
// first Sentinel announces it; every Sentinel announces each change.
func (d *DB) WatchLeader(ctx context.Context, c nodes.Nodes, moved func(begun bool, node string)) {
	if d.Topology != Sentinel {
		<-ctx.Done()
		return
	}
	var mu sync.Mutex
	master, pending := d.master, false
	line := func(fields []string) {
		// --csv: "message","<channel>","<payload>"
		if len(fields) != 3 || fields[0] != "message" {
			return
		}
		payload := strings.Fields(fields[2])
		mu.Lock()
		defer mu.Unlock()
		switch fields[1] {
		case "+try-failover":
			// master <name> <ip> <port>
			if len(payload) >= 4 && payload[1] == MasterName && !pending {
				if n := d.nodeOf(payload[2]); n != "" && n == master {
					pending = true
					moved(true, n)
				}
			}
		case "+switch-master":
			// <name> <old ip> <old port> <new ip> <new port>
			if len(payload) == 5 && payload[0] == MasterName {
				if n := d.nodeOf(payload[3]); n != "" && n != master {
					if !pending {
						moved(true, master)
					}
					master, pending = n, false
					moved(false, n)
				}
			}
		}
	}
	var wg sync.WaitGroup
	for _, n := range d.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.subscribe(ctx, c, n, line)
		}()
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if pending {
		moved(false, "")
	}
}

// subscribe runs redis-cli SUBSCRIBE against node's Sentinel until ctx
// ends (started again if it ends earlier: a restarted connection), and
// hands each message's fields to line. It kills its redis-cli at the end:
// Docker cannot stop an exec.
func (d *DB) subscribe(ctx context.Context, c nodes.Nodes, node string, line func([]string)) {
	pidfile := fmt.Sprintf("%s/sentinel-watch.pid", backends.LogDir)
	defer func() {
		kctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c.Exec(kctx, node, []string{"sh", "-c", fmt.Sprintf("kill $(cat %s) 2>/dev/null; rm -f %[1]s; true", pidfile)})
	}()
	for ctx.Err() == nil {
		s, err := c.ExecStream(ctx, node, []string{"sh", "-c", fmt.Sprintf("mkdir -p %s && echo $$ > %s && exec redis-cli --csv -p %d SUBSCRIBE +try-failover +switch-master",
			backends.LogDir, pidfile, SentinelPort)})
		if err == nil {
			s.Stdin.Close()
			sc := bufio.NewScanner(s.Stdout)
			for sc.Scan() {
				line(csvFields(sc.Text()))
			}
			s.Close()
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// csvFields splits redis-cli's --csv line ("a","b c","d") into its
// fields.
func csvFields(s string) []string {
	var out []string
	for _, f := range strings.Split(s, `","`) {
		out = append(out, strings.Trim(f, `"`))
	}
	return out
}

// sentinelEndpoint is what a client of the sentinel topology is given for
// one Sentinel: redis-sentinel://host:port/<master name>.
func sentinelEndpoint(node string) string {
	return fmt.Sprintf("redis-sentinel://%s/%s", net.JoinHostPort(node, fmt.Sprint(SentinelPort)), MasterName)
}
