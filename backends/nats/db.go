// Package nats tests locks taken in a NATS JetStream key-value bucket, the
// way teams that already run NATS take them: Create (only when the key is
// absent) is the acquire, the bucket's TTL is the lease, Update with the
// last revision renews it and Delete with the last revision releases it;
// the revision — a stream sequence — is the fencing token. It runs
// nats-server, compiled from the Go module proxy, as one JetStream cluster
// on the server nodes with the bucket replicated on every one of them,
// and speaks to it with the official Go client (nats.go's jetstream
// package). It must never keep the protected resource in NATS, hand out a
// token the servers did not produce, or name its servers' data directory
// anywhere but DataDir.
package nats

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// Ports nats-server listens on in its node.
const (
	ClientPort  = 4222
	ClusterPort = 6222
	MonitorPort = 8222
)

// DataDir is where each server keeps its JetStream data (its
// store_dir): the one directory whose writes reach the disk, and the one
// a fault over the servers' disks (a power loss) must wrap.
const DataDir = backends.DataRoot + "/nats"

// configPath is the server's configuration file in its node (written at
// every start: the sync setting is not a command-line flag).
const configPath = "/etc/nats-server.conf"

// Bucket is the key-value bucket the locks live in, made by Setup with
// the lease as its TTL and a replica on every server; a --client program
// binds to it by this name.
const Bucket = "fencecheck"

// StreamName is the bucket's stream, whose leader orders every write of
// a lock key.
const StreamName = "KV_" + Bucket

// clusterName names the JetStream cluster (its routes).
const clusterName = "fencecheck"

// DB runs nats-server on the server nodes as one JetStream cluster.
type DB struct {
	// LeaseTTL is the bucket's TTL: every key's lease.
	LeaseTTL time.Duration
	// Sync is the JetStream sync_interval setting (SyncFlag's value): ""
	// or "default" for the server's own (an fsync every 2 minutes), or
	// "always".
	Sync string
	// Version is the --server-version: VersionModule ("" too) or an exact
	// release (Release), compiled and copied into the nodes, or
	// VersionDebian, the node image's.
	Version string

	arch  string // the engine's, from Prepare
	nodes []string
}

// Prepare compiles nats-server (or finds it in the cache) in the run's
// image phase, so that the compile shows there as a timed step.
func (d *DB) Prepare(ctx context.Context, arch string, progress io.Writer) error {
	d.arch = arch
	if d.debian() {
		return nil
	}
	s, err := d.build()
	if err != nil {
		return err
	}
	_, err = s.Binary(ctx, arch, progress)
	return err
}

// debian says whether the servers are Debian's package, in the node image.
func (d *DB) debian() bool { return d.Version == VersionDebian }

// binary is the server's path in the nodes.
func (d *DB) binary() string {
	if d.debian() {
		return DebianBinary
	}
	return binaryPath
}

func (d *DB) Setup(ctx context.Context, c nodes.Nodes, servers []string) error {
	if nodes.ServerImage(c) != "" {
		return fmt.Errorf("backend nats runs its own nats-server build, not a --server-image")
	}
	if err := CheckSync(d.Sync); err != nil {
		return err
	}
	if d.debian() && d.Sync == SyncAlways {
		return fmt.Errorf("nats-server %s has no sync_interval", DebianVersion)
	}
	d.nodes = servers
	var bin []byte
	if !d.debian() {
		arch := d.arch
		if arch == "" {
			var err error
			if arch, err = c.Arch(ctx); err != nil {
				return err
			}
		}
		s, err := d.build()
		if err != nil {
			return err
		}
		if bin, err = s.Binary(ctx, arch, nil); err != nil {
			return err
		}
	}
	if err := backends.OnEachNode(servers, func(_ int, n string) error {
		if bin != nil {
			if err := c.CopyTo(ctx, n, binaryPath, bin, 0o755); err != nil {
				return err
			}
		}
		return d.Start(ctx, c, n)
	}); err != nil {
		return err
	}
	// /healthz answers 200 once the server's JetStream is current with
	// the cluster's meta leader.
	for _, n := range servers {
		if err := backends.WaitUntil(ctx, c, n, "nats", d.healthProbe(), 60*time.Second); err != nil {
			return err
		}
	}
	// The sync setting is the one a power fault's verdict rests on: each
	// server must say it runs with it, in DataDir.
	for _, n := range servers {
		if err := d.checkStore(ctx, c, n); err != nil {
			return err
		}
	}
	if err := d.createBucket(ctx, c); err != nil {
		return err
	}
	// Ready when every replica of the bucket's stream is current (healthz
	// checks the streams a server holds) and a stream leader is known.
	for _, n := range servers {
		if err := backends.WaitUntil(ctx, c, n, "nats", d.healthProbe(), 30*time.Second); err != nil {
			return err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := d.Primary(ctx, c); err == nil {
			return nil
		} else if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("the bucket's stream %s has no leader 30 s after it was made: %v", StreamName, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (d *DB) healthProbe() []string {
	return []string{nodes.BinaryPath, "probe", fmt.Sprintf("http://127.0.0.1:%d/healthz", MonitorPort)}
}

// binaryPath is where the compiled server is copied in the nodes.
const binaryPath = "/usr/local/bin/nats-server"

func (d *DB) Endpoints() []string {
	var out []string
	for _, n := range d.nodes {
		out = append(out, fmt.Sprintf("nats://%s:%d", n, ClientPort))
	}
	return out
}

// config is node's server configuration.
func (d *DB) config(node string) string {
	var routes []string
	for _, n := range d.nodes {
		routes = append(routes, fmt.Sprintf("nats://%s:%d", n, ClusterPort))
	}
	sync := ""
	if d.Sync == SyncAlways {
		sync = "\n  sync_interval: always"
	}
	return fmt.Sprintf(`server_name: %q
listen: "0.0.0.0:%d"
http: "0.0.0.0:%d"
jetstream {
  store_dir: %q%s
}
cluster {
  name: %q
  listen: "0.0.0.0:%d"
  routes: [%s]
}
`, node, ClientPort, MonitorPort, DataDir, sync, clusterName, ClusterPort, strings.Join(routes, ", "))
}

// Start writes node's configuration and runs its server as a daemon (a
// restart after Kill finds its data in DataDir).
func (d *DB) Start(ctx context.Context, c nodes.Nodes, node string) error {
	if err := c.CopyTo(ctx, node, configPath, []byte(d.config(node)), 0o644); err != nil {
		return err
	}
	return backends.StartDaemon(ctx, c, node, "nats", []string{d.binary(), "-c", configPath}, nodes.ExecOptions{})
}

func (d *DB) Kill(ctx context.Context, c nodes.Nodes, node string) error {
	return backends.KillDaemon(ctx, c, node, "nats")
}

// bucketConfig is the bucket's stream as nats.go's CreateKeyValue makes
// it (jetstream.KeyValueConfig{Bucket, TTL, Replicas, Storage: file}):
// one message per key, the TTL as the stream's max age, rollups and
// direct gets allowed; AllowMsgTTL too, so that a --client program may
// give its keys TTLs of their own.
func (d *DB) bucketConfig() jetstream.StreamConfig {
	dup := 2 * time.Minute
	if d.LeaseTTL < dup {
		dup = d.LeaseTTL
	}
	return jetstream.StreamConfig{
		Name:              StreamName,
		Subjects:          []string{"$KV." + Bucket + ".>"},
		MaxMsgsPerSubject: 1,
		MaxBytes:          -1,
		MaxAge:            d.LeaseTTL,
		MaxMsgSize:        -1,
		MaxMsgs:           -1,
		MaxConsumers:      -1,
		Storage:           jetstream.FileStorage,
		Replicas:          len(d.nodes),
		AllowRollup:       true,
		DenyDelete:        true,
		Duplicates:        dup,
		AllowDirect:       true,
		Discard:           jetstream.DiscardNew,
		AllowMsgTTL:       true,
	}
}

// createBucket makes the bucket through the JetStream API of the server
// in the first node that answers, inside that node: bash speaks the NATS
// protocol over /dev/tcp (a request on $JS.API.STREAM.CREATE), as the
// other backends ask their servers over HTTP from inside the nodes. A
// retry finds the same stream and succeeds.
func (d *DB) createBucket(ctx context.Context, c nodes.Nodes) error {
	body, err := json.Marshal(d.bucketConfig())
	if err != nil {
		return err
	}
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for {
		for _, n := range d.nodes {
			answer, err := jsRequest(ctx, c, n, "$JS.API.STREAM.CREATE."+StreamName, string(body))
			if err != nil {
				last = err.Error()
				continue
			}
			if err := apiAnswerError(answer); err != "" {
				last = n + ": " + err
				continue
			}
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("could not make the bucket %s (stream %s) within 30 s: %s", Bucket, StreamName, last)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// apiAnswerError is the error a JetStream API answer carries, "" for none.
func apiAnswerError(answer string) string {
	var a struct {
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(answer), &a); err != nil {
		return fmt.Sprintf("unreadable answer %q", tailOf(answer, 200))
	}
	if a.Error != nil {
		return fmt.Sprintf("%s (code %d, error code %d)", a.Error.Description, a.Error.Code, a.Error.ErrCode)
	}
	return ""
}

// jsRequestScript sends one request ($1 the subject, $2 the body) to the
// server on 127.0.0.1 and prints the reply's payload; exit 3 when no
// server answers for the subject (no responders), 2 on a protocol error.
const jsRequestScript = `exec 3<>/dev/tcp/127.0.0.1/%d || exit 1
printf 'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true,"protocol":1}\r\nSUB _INBOX.fencecheck 1\r\nPUB %%s _INBOX.fencecheck %%d\r\n%%s\r\nPING\r\n' "$1" "${#2}" "$2" >&3
while IFS= read -r line <&3; do
  line=${line%%$'\r'}
  case "$line" in
    MSG\ *) IFS= read -r body <&3; printf '%%s\n' "${body%%$'\r'}"; exit 0 ;;
    HMSG\ *) echo "no responders for $1" >&2; exit 3 ;;
    -ERR*) echo "$line" >&2; exit 2 ;;
    PING) printf 'PONG\r\n' >&3 ;;
  esac
done
echo "the server closed the connection" >&2
exit 2`

// jsRequest asks the server in node one JetStream API request.
func jsRequest(ctx context.Context, c nodes.Nodes, node, subject, body string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := c.Exec(ctx, node, []string{"timeout", "8", "bash", "-c", fmt.Sprintf(jsRequestScript, ClientPort), "js-request", subject, body})
	if err != nil {
		return "", fmt.Errorf("%s: %w", node, err)
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("%s: %s (exit %d)", node, strings.TrimSpace(res.Stderr), res.ExitCode)
	}
	return strings.TrimSpace(res.Stdout), nil
}

// Primary is the leader of the bucket's stream: the server that orders
// and applies every Create, Update and Delete of a lock key, so pausing
// it stops the locks until another replica is elected. (The meta leader
// only assigns streams to servers; no lock operation waits on it.) Each
// server's /jsz says which server leads the streams it holds, asked
// inside its node; one that says it leads itself is taken first, as the
// others may not have heard of a new election yet.
func (d *DB) Primary(ctx context.Context, c nodes.Nodes) (string, error) {
	var said []string
	var errs []string
	for _, n := range d.nodes {
		leader, err := d.streamLeaderSeenBy(ctx, c, n)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		if leader == n {
			return n, nil
		}
		if leader != "" {
			said = append(said, leader)
		}
	}
	if len(said) > 0 {
		return said[0], nil
	}
	return "", fmt.Errorf("no nats-server knows a leader of stream %s (%s)", StreamName, strings.Join(errs, "; "))
}

func (d *DB) streamLeaderSeenBy(ctx context.Context, c nodes.Nodes, node string) (string, error) {
	body, err := backends.HTTPGetInNode(ctx, c, node, MonitorPort, "/jsz?accounts=true&streams=true")
	if err != nil {
		return "", err
	}
	return parseStreamLeader(node, body)
}

// parseStreamLeader reads the bucket stream's leader from a /jsz answer.
func parseStreamLeader(node, body string) (string, error) {
	var jsz struct {
		Accounts []struct {
			Streams []struct {
				Name    string `json:"name"`
				Cluster *struct {
					Leader string `json:"leader"`
				} `json:"cluster"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if err := json.Unmarshal([]byte(body), &jsz); err != nil {
		return "", fmt.Errorf("%s: /jsz answered %q: %w", node, tailOf(body, 200), err)
	}
	for _, a := range jsz.Accounts {
		for _, s := range a.Streams {
			if s.Name == StreamName && s.Cluster != nil {
				return s.Cluster.Leader, nil
			}
		}
	}
	return "", fmt.Errorf("%s holds no stream %s", node, StreamName)
}

func (d *DB) LogFiles() []string { return []string{backends.LogDir} }

func (d *DB) Info() map[string]string {
	sync := "sync_interval default (2 min)"
	if d.Sync == SyncAlways {
		sync = "sync_interval always"
	}
	build := d.buildVersion() + ", built from the module proxy"
	if d.debian() {
		build = DebianVersion + ", Debian's package"
	}
	return map[string]string{"lock service": fmt.Sprintf("nats-server %s (JetStream, %s) on %s; bucket %s, R=%d, TTL %s",
		build, sync, strings.Join(d.nodes, ", "), Bucket, len(d.nodes), d.LeaseTTL)}
}

// checkStore asks node's server, on /varz, where it keeps its JetStream
// data and whether it fsyncs every write, and compares both with what it
// was configured with.
func (d *DB) checkStore(ctx context.Context, c nodes.Nodes, node string) error {
	body, err := backends.HTTPGetInNode(ctx, c, node, MonitorPort, "/varz")
	if err != nil {
		return err
	}
	return checkStoreAnswer(node, body, d.Sync == SyncAlways)
}

func checkStoreAnswer(node, body string, always bool) error {
	var v struct {
		JetStream struct {
			Config *struct {
				StoreDir   string `json:"store_dir"`
				SyncAlways bool   `json:"sync_always"`
			} `json:"config"`
		} `json:"jetstream"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.JetStream.Config == nil {
		return fmt.Errorf("%s: /varz has no JetStream configuration: %q", node, tailOf(strings.TrimSpace(body), 200))
	}
	cfg := v.JetStream.Config
	if !strings.HasPrefix(cfg.StoreDir, DataDir) {
		return fmt.Errorf("%s: nats-server keeps its JetStream data in %q, not in %s", node, cfg.StoreDir, DataDir)
	}
	if cfg.SyncAlways != always {
		return fmt.Errorf("%s: nats-server says sync_always is %t, but it was configured %t", node, cfg.SyncAlways, always)
	}
	return nil
}

// VersionQuery says how AskVersion asks.
const VersionQuery = "GET /varz on each server's monitoring port (version)"

// AskVersion asks node's server its version on its monitoring port's
// /varz, which every nats-server serves: {"server_id": …, "version":
// "2.15.3", …}. The answer kept is the version field.
func (d *DB) AskVersion(ctx context.Context, c nodes.Nodes, node string) (backends.ServerVersion, error) {
	body, err := backends.HTTPGetInNode(ctx, c, node, MonitorPort, "/varz")
	if err != nil {
		return backends.ServerVersion{}, err
	}
	return parseVersion(node, body)
}

func parseVersion(node, body string) (backends.ServerVersion, error) {
	var v struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Version == "" {
		return backends.ServerVersion{}, fmt.Errorf("%s: /varz answered %q", node, tailOf(strings.TrimSpace(body), 200))
	}
	return backends.ServerVersion{Answer: v.Version, Version: backends.Release(v.Version)}, nil
}

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
