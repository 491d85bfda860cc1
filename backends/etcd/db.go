// Package etcd tests etcd's lock: a static cluster on the server nodes, the
// concurrency.Mutex recipe over a concurrency.Session lease, the lock key's
// create revision as the fencing token, and — as etcd's maintainers
// recommend — the resource kept in etcd itself behind a transaction
// guarded by the lock.
package etcd

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose"
)

// Ports etcd listens on in its nodes.
const (
	ClientPort = 2379
	PeerPort   = 2380
)

// Versions maps --server-version to the binary in the node image: Debian's
// 3.4 and the 3.6 built from the module proxy.
var Versions = map[string]string{"3.4": "/usr/bin/etcd", "3.6": "/usr/local/bin/etcd-3.6"}

// MinTTL is the shortest lease etcd grants with its default election
// timeout: 3/2 × 1 s, rounded up to whole seconds.
const MinTTL = 2 * time.Second

// TTLSeconds is the session TTL for a requested lease, clamped to what
// etcd accepts; clamped reports whether it had to be.
func TTLSeconds(ttl time.Duration) (secs int, clamped bool) {
	s := int(math.Ceil(ttl.Seconds()))
	if time.Duration(s)*time.Second < MinTTL {
		return int(MinTTL / time.Second), true
	}
	return s, time.Duration(s)*time.Second != ttl
}

// DB runs etcd on the server nodes as one static cluster.
type DB struct {
	Version string // "3.4" or "3.6"
	TestID  string
	nodes   []string
	ips     map[string]string
}

func (d *DB) binary() string { return Versions[d.Version] }

func (d *DB) Setup(ctx context.Context, c *compose.Cluster, nodes []string) error {
	if d.binary() == "" {
		return fmt.Errorf("unknown etcd version %q (accepted: 3.4, 3.6)", d.Version)
	}
	d.nodes = nodes
	ips, err := backends.NodeIPs(c, nodes)
	if err != nil {
		return err
	}
	d.ips = ips
	if err := backends.OnEachNode(nodes, func(_ int, n string) error { return d.Start(ctx, c, n) }); err != nil {
		return err
	}
	for _, n := range nodes {
		// /health answers 200 only when the member sees a leader.
		if err := backends.WaitUntil(ctx, c, n, "etcd",
			[]string{compose.BinaryPath, "probe", fmt.Sprintf("http://127.0.0.1:%d/health", ClientPort)}, 60*time.Second); err != nil {
			return err
		}
	}
	return nil
}

func (d *DB) Endpoints() []string {
	var out []string
	for _, n := range d.nodes {
		out = append(out, fmt.Sprintf("http://%s:%d", n, ClientPort))
	}
	return out
}

func (d *DB) Start(ctx context.Context, c *compose.Cluster, node string) error {
	var peers []string
	for _, n := range d.nodes {
		peers = append(peers, fmt.Sprintf("%s=http://%s:%d", n, n, PeerPort))
	}
	cmd := []string{d.binary(),
		"--name", node,
		"--data-dir", "/var/lib/fencecheck/etcd",
		"--listen-client-urls", fmt.Sprintf("http://0.0.0.0:%d", ClientPort),
		"--advertise-client-urls", fmt.Sprintf("http://%s:%d", node, ClientPort),
		"--listen-peer-urls", fmt.Sprintf("http://0.0.0.0:%d", PeerPort),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://%s:%d", node, PeerPort),
		"--initial-cluster", strings.Join(peers, ","),
		"--initial-cluster-state", "new",
		"--initial-cluster-token", "fencecheck-" + d.TestID,
	}
	return backends.StartDaemon(ctx, c, node, "etcd", cmd, compose.ExecOptions{})
}

func (d *DB) Kill(ctx context.Context, c *compose.Cluster, node string) error {
	return backends.KillDaemon(ctx, c, node, "etcd")
}

// Primary asks the members, from the host, which one leads.
func (d *DB) Primary(ctx context.Context, _ *compose.Cluster) (string, error) {
	var eps []string
	byIP := map[string]string{}
	for _, n := range d.nodes {
		eps = append(eps, fmt.Sprintf("http://%s:%d", d.ips[n], ClientPort))
		byIP[d.ips[n]] = n
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: eps, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", err
	}
	defer cli.Close()
	for _, ep := range eps {
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		if err != nil || st.Leader == 0 {
			continue
		}
		mctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ml, err := cli.MemberList(mctx)
		cancel()
		if err != nil {
			continue
		}
		for _, m := range ml.Members {
			if m.ID == st.Leader {
				return m.Name, nil
			}
		}
	}
	return "", fmt.Errorf("no etcd member knows a leader")
}

func (d *DB) LogFiles() []string { return []string{backends.LogDir} }

func (d *DB) Info() map[string]string {
	return map[string]string{"lock service": fmt.Sprintf("etcd %s (%s) on %s", d.Version, d.binary(), strings.Join(d.nodes, ", "))}
}
