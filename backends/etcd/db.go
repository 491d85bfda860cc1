// Package etcd tests etcd's lock: a static cluster on the server nodes, the
// concurrency.Mutex recipe over a concurrency.Session lease, the lock key's
// create revision as the fencing token, and — as etcd's maintainers
// recommend — the resource kept in etcd itself behind a transaction
// guarded by the lock.
package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/compose/nodes"
)

// Ports etcd listens on in its nodes.
const (
	ClientPort = 2379
	PeerPort   = 2380
)

// Versions maps --server-version to the binary the servers run: Debian's
// 3.4 and the 3.6 built into the node image, and 3.5 and 3.7 built from
// the Go module proxy only when a run asks for them (onDemand), then
// copied into the server nodes.
var Versions = map[string]string{
	"3.4": "/usr/bin/etcd",
	"3.5": "/usr/local/bin/" + images.EtcdBinaryName("3.5"),
	"3.6": "/usr/local/bin/" + images.EtcdBinaryName(images.EtcdImageVersion),
	"3.7": "/usr/local/bin/" + images.EtcdBinaryName("3.7"),
}

// onDemand says whether version is compiled for the run rather than
// carried by the node image.
func onDemand(version string) bool {
	return version != "3.4" && version != images.EtcdImageVersion
}

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
	Version string // a key of Versions, or an exact release (images.EtcdRelease)
	TestID  string
	// UnsafeNoFsync runs the servers with --unsafe-no-fsync.
	UnsafeNoFsync bool
	// Failpoints runs the failpoint build (failpoints.go), its endpoint
	// on FailpointPort.
	Failpoints bool
	// CompactEvery and DefragEvery are the servers' upkeep during the
	// workload (maintain.go); 0 is none.
	CompactEvery, DefragEvery time.Duration
	arch                      string // the engine's, for an on-demand build (Prepare)
	image                     string // the user's server image (--server-image), "" for the node image's etcd
	nodes                     []string
	ips                       map[string]string
	// hosts is what a member writes to reach each server (by node name):
	// the name on Docker, the peer address on bare hosts, where nothing
	// resolves n1 (nodes.PeerHost).
	hosts map[string]string
}

// host is what the members and clients write for node: its name, or its
// address on bare hosts.
func (d *DB) host(node string) string {
	if h, ok := d.hosts[node]; ok {
		return h
	}
	return node
}

// binary is the server's path in the nodes: the failpoint build's when
// the run arms failpoints, Versions' for a named build,
// /usr/local/bin/etcd-3.5.4 for an exact release (compiled for the run,
// as 3.5 and 3.7 are).
func (d *DB) binary() string {
	if d.Failpoints {
		return failpointBinary(d.Version)
	}
	if images.IsEtcdRelease(d.Version) {
		return "/usr/local/bin/" + images.EtcdBinaryName(d.Version)
	}
	return Versions[d.Version]
}

// Prepare compiles (or finds in the cache) an on-demand build before the
// cluster exists, so the minute it may take shows in the image phase with
// its progress.
func (d *DB) Prepare(ctx context.Context, arch string, progress io.Writer) error {
	if !d.compiled() {
		return nil
	}
	d.arch = arch
	_, err := d.build(ctx, arch, progress)
	return err
}

// compiled says whether the servers run a build compiled for the run
// (an on-demand release, or any failpoint build) rather than one the
// node image carries.
func (d *DB) compiled() bool { return onDemand(d.Version) || d.Failpoints }

// build is the compiled binary the servers run (compiled says there is
// one): the plain build or the failpoint build.
func (d *DB) build(ctx context.Context, arch string, progress io.Writer) ([]byte, error) {
	if d.Failpoints {
		return images.EtcdFailpointBinary(ctx, d.Version, arch, progress)
	}
	return images.EtcdBinary(ctx, d.Version, arch, progress)
}

func (d *DB) Setup(ctx context.Context, c nodes.Nodes, servers []string) error {
	d.image = nodes.ServerImage(c)
	if d.binary() == "" && d.image == "" {
		return fmt.Errorf("unknown etcd version %q (accepted: %s)", d.Version, strings.Join(slices.Sorted(maps.Keys(Versions)), ", "))
	}
	d.nodes = servers
	ips, err := backends.NodeIPs(c, servers)
	if err != nil {
		return err
	}
	d.ips = ips
	d.hosts = map[string]string{}
	for _, n := range servers {
		if d.hosts[n], err = nodes.PeerHost(c, n); err != nil {
			return err
		}
	}
	bare := nodes.IsBare(c)
	if bare {
		if err := d.OnBare(); err != nil {
			return err
		}
	}
	// On bare hosts every build is copied in, the node image's own 3.6
	// too: the same compiled binary the image carries.
	if (d.compiled() || bare) && d.image == "" {
		if err := d.copyBinary(ctx, c, servers); err != nil {
			return err
		}
	}
	if err := backends.OnEachNode(servers, func(_ int, n string) error { return d.Start(ctx, c, n) }); err != nil {
		return err
	}
	for _, n := range servers {
		// /health answers 200 only when the member sees a leader.
		if err := backends.WaitUntil(ctx, c, n, "etcd",
			[]string{nodes.BinaryPath, "probe", fmt.Sprintf("http://127.0.0.1:%d/health", ClientPort)}, 60*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// copyBinary puts the on-demand build into every server node (already
// compiled by Prepare; a warm cluster gets it again, the same bytes).
func (d *DB) copyBinary(ctx context.Context, c nodes.Nodes, nodes []string) error {
	arch := d.arch
	if arch == "" {
		var err error
		if arch, err = c.Arch(ctx); err != nil {
			return err
		}
	}
	bin, err := d.build(ctx, arch, nil)
	if err != nil {
		return err
	}
	return backends.OnEachNode(nodes, func(_ int, n string) error {
		return c.CopyTo(ctx, n, d.binary(), bin, 0o755)
	})
}

func (d *DB) Endpoints() []string {
	var out []string
	for _, n := range d.nodes {
		out = append(out, fmt.Sprintf("http://%s:%d", d.host(n), ClientPort))
	}
	return out
}

// DataDir is where etcd keeps its data in a node.
const DataDir = backends.DataRoot + "/etcd"

// ImageDataDir is where etcd keeps its data when it runs from the user's
// image: under the official image's working directory, /var/lib/etcd.
const ImageDataDir = "/var/lib/etcd/fencecheck"

// config is every setting the servers take, as etcd flag names without
// their dashes; each is also the ETCD_<NAME> variable an image reads.
func (d *DB) config(node, dataDir string) [][2]string {
	var peers []string
	for _, n := range d.nodes {
		peers = append(peers, fmt.Sprintf("%s=http://%s:%d", n, d.host(n), PeerPort))
	}
	cfg := [][2]string{
		{"name", node},
		{"data-dir", dataDir},
		{"listen-client-urls", fmt.Sprintf("http://0.0.0.0:%d", ClientPort)},
		{"advertise-client-urls", fmt.Sprintf("http://%s:%d", d.host(node), ClientPort)},
		{"listen-peer-urls", fmt.Sprintf("http://0.0.0.0:%d", PeerPort)},
		{"initial-advertise-peer-urls", fmt.Sprintf("http://%s:%d", d.host(node), PeerPort)},
		{"initial-cluster", strings.Join(peers, ",")},
		{"initial-cluster-state", "new"},
		{"initial-cluster-token", "fencecheck-" + d.TestID},
	}
	if d.UnsafeNoFsync {
		cfg = append(cfg, [2]string{"unsafe-no-fsync", "true"})
	}
	return cfg
}

// Start runs node's server: the node image's etcd as a daemon in the
// node, or the user's image by its own CMD, configured the way the
// official etcd images are, through ETCD_* variables (etcd reads one for
// every flag), so nothing depends on where the image keeps its binary.
func (d *DB) Start(ctx context.Context, c nodes.Nodes, node string) error {
	if d.image != "" {
		var env []string
		for _, kv := range d.config(node, ImageDataDir) {
			env = append(env, "ETCD_"+strings.ToUpper(strings.ReplaceAll(kv[0], "-", "_"))+"="+kv[1])
		}
		is, err := nodes.ImageServersOf(c)
		if err != nil {
			return err
		}
		return is.StartImageServer(ctx, node, nodes.ImageServer{Env: env})
	}
	cmd := []string{d.binary()}
	for _, kv := range d.config(node, DataDir) {
		if kv[1] == "true" {
			// A boolean flag takes no separate value.
			cmd = append(cmd, "--"+kv[0])
			continue
		}
		cmd = append(cmd, "--"+kv[0], kv[1])
	}
	return backends.StartDaemon(ctx, c, node, "etcd", cmd, nodes.ExecOptions{Env: d.failpointEnv()})
}

func (d *DB) Kill(ctx context.Context, c nodes.Nodes, node string) error {
	if d.image != "" {
		is, err := nodes.ImageServersOf(c)
		if err != nil {
			return err
		}
		return is.KillImageServer(ctx, node)
	}
	return backends.KillDaemon(ctx, c, node, "etcd")
}

// Primary asks the members which one leads: each server's own status, read
// inside its node through etcd's JSON gateway on its client port (an exec,
// so it works as well on a remote Docker engine, whose container addresses
// this host cannot reach). A node that cannot answer (paused, killed,
// partitioned off) is skipped.
func (d *DB) Primary(ctx context.Context, c nodes.Nodes) (string, error) {
	byID := map[string]string{}
	leader := ""
	var errs []string
	for _, n := range d.nodes {
		st, err := memberStatus(ctx, c, n)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		byID[st.member] = n
		if st.leader != "" && st.leader != "0" {
			leader = st.leader
		}
	}
	if name, ok := byID[leader]; ok && leader != "" {
		return name, nil
	}
	if leader != "" {
		return "", fmt.Errorf("the leader, member %s, did not answer", leader)
	}
	return "", fmt.Errorf("no etcd member knows a leader (%s)", strings.Join(errs, "; "))
}

type memberState struct{ member, leader string }

// memberStatus is node's answer to the maintenance Status call, asked of
// the server in the node over HTTP/1.0 by bash.
func memberStatus(ctx context.Context, c nodes.Nodes, node string) (memberState, error) {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req := `POST /v3/maintenance/status HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}`
	res, err := c.Exec(ctx, node, []string{"timeout", "2", "bash", "-c",
		fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && printf '%s' >&3 && cat <&3`, ClientPort, req)})
	if err != nil {
		return memberState{}, fmt.Errorf("%s: %w", node, err)
	}
	if res.ExitCode != 0 {
		return memberState{}, fmt.Errorf("%s: status exit %d: %s", node, res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return parseStatus(node, res.Stdout)
}

// parseStatus reads the gateway's HTTP answer: the member's own id and the
// leader's (64-bit numbers, which the gateway writes as strings).
func parseStatus(node, answer string) (memberState, error) {
	_, body, ok := strings.Cut(answer, "\r\n\r\n")
	if !ok || !strings.HasPrefix(answer, "HTTP/1.") || !strings.Contains(strings.SplitN(answer, "\r\n", 2)[0], " 200 ") {
		return memberState{}, fmt.Errorf("%s: status answered %q", node, tailOf(answer, 200))
	}
	var st struct {
		Header struct {
			MemberID json.Number `json:"member_id"`
		} `json:"header"`
		Leader json.Number `json:"leader"`
	}
	if err := json.Unmarshal([]byte(unquoteNumbers(body)), &st); err != nil {
		return memberState{}, fmt.Errorf("%s: status answered %q: %w", node, tailOf(body, 200), err)
	}
	if st.Header.MemberID == "" {
		return memberState{}, fmt.Errorf("%s: status has no member id: %q", node, tailOf(body, 200))
	}
	return memberState{member: st.Header.MemberID.String(), leader: st.Leader.String()}, nil
}

// unquoteNumbers turns the gateway's quoted 64-bit numbers ("123") into
// JSON numbers, so json.Number reads them exactly.
func unquoteNumbers(body string) string {
	return quotedNumber.ReplaceAllString(body, `$1`)
}

var quotedNumber = regexp.MustCompile(`"([0-9]+)"`)

func tailOf(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

func (d *DB) LogFiles() []string { return []string{backends.LogDir} }

func (d *DB) Info() map[string]string {
	if d.image != "" {
		return map[string]string{"lock service": fmt.Sprintf("etcd from image %s on %s", d.image, strings.Join(d.nodes, ", "))}
	}
	what := fmt.Sprintf("etcd %s (%s) on %s", d.Version, d.binary(), strings.Join(d.nodes, ", "))
	if d.Failpoints {
		what += fmt.Sprintf(", failpoints (gofail %s) on port %d", images.GofailVersion, FailpointPort)
	}
	if up := d.upkeepInfo(); up != "" {
		what += "; " + up
	}
	return map[string]string{"lock service": what}
}

// AskVersion asks node's server its version on its client port's /version
// endpoint, which every etcd release serves: {"etcdserver": "3.6.16",
// "etcdcluster": "3.6.0"}. The body is kept verbatim; the version is
// etcdserver, the server's own release.
func (d *DB) AskVersion(ctx context.Context, c nodes.Nodes, node string) (backends.ServerVersion, error) {
	body, err := backends.HTTPGetInNode(ctx, c, node, ClientPort, "/version")
	if err != nil {
		return backends.ServerVersion{}, err
	}
	return parseVersion(node, body)
}

// VersionQuery says how AskVersion asks.
const VersionQuery = "GET /version on each member's client port (etcdserver)"

func parseVersion(node, body string) (backends.ServerVersion, error) {
	var v struct {
		Server string `json:"etcdserver"`
	}
	body = strings.TrimSpace(body)
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.Server == "" {
		return backends.ServerVersion{}, fmt.Errorf("%s: /version answered %q", node, tailOf(body, 200))
	}
	return backends.ServerVersion{Answer: body, Version: v.Server}, nil
}

// OnBare says whether the servers can run on bare hosts: every compiled
// build can (copied in); Debian's 3.4 lives only in the node image.
func (d *DB) OnBare() error {
	if d.image != "" {
		return fmt.Errorf("--server-image runs etcd from an image, which needs Docker nodes")
	}
	if d.Version == "3.4" {
		return fmt.Errorf("etcd 3.4 is Debian's package, which fencecheck puts only in its node image: on hosts it copies in an etcd it compiled (--server-version %s, 3.5, 3.7 or an exact release such as 3.5.4)", images.EtcdImageVersion)
	}
	return nil
}
