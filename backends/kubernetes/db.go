// Package kubernetes tests Kubernetes leader election: a real
// kube-apiserver (compiled from the Go module proxy on first use), or
// three of them (--apiservers 3), in front of a 3-member etcd cluster,
// and clients that each run client-go's own tools/leaderelection with a
// LeaseLock on a coordination.k8s.io/v1 Lease, the fencing token being the
// Lease's spec.leaseTransitions as the winner read it back.
//
// This package is the check binary's side: the servers, the flags, the
// notes. The clients are package election, linked only into their own
// agent program, check-kubernetes (registry.Info.Agent), which the harness
// runs in the client containers; clientconf is what the two sides share.
// It must never import election or anything of k8s.io: client-go would be
// two fifths of the check binary again.
package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/etcd"
	"github.com/fencecheck/fencecheck/backends/kubernetes/clientconf"
	"github.com/fencecheck/fencecheck/compose/images"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// APIServerPort is the API server's secure port in its node.
const APIServerPort = 6443

// EtcdMembers is the size of the etcd cluster behind the API servers.
const EtcdMembers = 3

// APIServersFlag is the backend's own flag for how many API servers run
// in front of the etcd cluster. It is a flag of its own, not --nodes:
// --nodes defaults to 3 on the command line and in compare, and must not
// silently triple the API servers of a run that did not ask.
const APIServersFlag = "apiservers"

// APIServerCounts are the accepted --apiservers, the default first: one
// API server, as most test clusters run, or three, as a highly available
// control plane does (kubeadm's stacked control plane: one per etcd
// member).
var APIServerCounts = []int{1, 3}

// ParseAPIServers reads --apiservers ("" is the default, 1). Its error
// names the accepted values and an example.
func ParseAPIServers(v string) (int, error) {
	if v == "" {
		return APIServerCounts[0], nil
	}
	if n, err := strconv.Atoi(v); err == nil && slices.Contains(APIServerCounts, n) {
		return n, nil
	}
	return 0, fmt.Errorf("unknown value %q (accepted: 1, 3; e.g. --apiservers 3 runs three kube-apiservers in front of the same etcd)", v)
}

// CheckAPIServers says whether v is an accepted --apiservers.
func CheckAPIServers(v string) error {
	_, err := ParseAPIServers(v)
	return err
}

// Where an API server's files live in its node: the binary, and its
// certificate, keys and token file, made fresh for each cluster (under
// backends.DataRoot, so a warm cluster's rewarm empties them).
const (
	apiserverBinary = "/usr/local/bin/" + images.KubeAPIServerBinaryName
	apiserverDir    = backends.DataRoot + "/kube-apiserver"
	apiserverCert   = apiserverDir + "/serving.crt"
	apiserverKey    = apiserverDir + "/serving.key"
	apiserverSAKey  = apiserverDir + "/service-account.key"
	apiserverTokens = apiserverDir + "/tokens.csv"
	apiserverName   = "kube-apiserver" // its log is LogDir/kube-apiserver.log
)

// DB is the cluster: etcd on the first EtcdMembers server nodes, exactly
// as the etcd backend runs it (the node image's etcd 3.6), and APIServers
// kube-apiservers on the server nodes after them, each in its own
// container, all in front of the same etcd members. A fault aimed at a
// server node so reaches either an etcd member or one API server and
// never both at once, and each API server's memory is its container's.
type DB struct {
	TestID   string
	LeaseTTL time.Duration
	// APIServers is how many API servers run (APIServerCounts).
	APIServers int
	// Client is the --client program's name, "" when fencecheck's own
	// agents run the election: the report then names the program, not
	// client-go's durations it does not choose.
	Client string

	etcd       *etcd.DB
	arch       string
	etcdNodes  []string
	apiservers []string          // the API server nodes, in order
	ips        map[string]string // each API server node's address
	sec        *secrets
}

// NewDB is the cluster for a run with lease ttl and one API server.
func NewDB(testID string, ttl time.Duration) *DB {
	return &DB{TestID: testID, LeaseTTL: ttl, APIServers: 1, etcd: &etcd.DB{Version: images.EtcdImageVersion, TestID: testID}}
}

// newDBFor is the cluster a run's setup asks for: its --apiservers
// (refused, as a *usage.Error, before anything exists).
func newDBFor(testID string, ttl time.Duration, options map[string]string) (*DB, error) {
	n, err := ParseAPIServers(options[APIServersFlag])
	if err != nil {
		return nil, usage.Errorf(APIServersFlag, "%v", err)
	}
	d := NewDB(testID, ttl)
	d.APIServers = n
	return d, nil
}

// Servers is how many server nodes the cluster takes: the etcd members
// and the API servers.
func (d *DB) Servers() int { return EtcdMembers + d.apiserverCount() }

func (d *DB) apiserverCount() int { return max(1, d.APIServers) }

// isAPIServer says whether node runs an API server (not etcd).
func (d *DB) isAPIServer(node string) bool {
	return slices.Contains(d.apiservers, node)
}

// Prepare compiles (or finds in the cache) the API server before the
// cluster exists, so its compile shows in the image phase with its time.
func (d *DB) Prepare(ctx context.Context, arch string, progress io.Writer) error {
	d.arch = arch
	_, err := images.KubeAPIServerBinary(ctx, arch, progress)
	return err
}

func (d *DB) Setup(ctx context.Context, c nodes.Nodes, servers []string) error {
	if nodes.ServerImage(c) != "" {
		return fmt.Errorf("backend kubernetes runs its own etcd and kube-apiserver builds; --server-image is not accepted")
	}
	if len(servers) != d.Servers() {
		return fmt.Errorf("backend kubernetes needs %d server nodes (%d etcd members and %d API servers), got %d", d.Servers(), EtcdMembers, d.apiserverCount(), len(servers))
	}
	d.etcdNodes, d.apiservers = servers[:EtcdMembers], servers[EtcdMembers:]
	ips, err := backends.NodeIPs(c, d.apiservers)
	if err != nil {
		return err
	}
	d.ips = ips
	var addrs []string
	for _, n := range d.apiservers {
		addrs = append(addrs, ips[n])
	}
	if d.sec, err = newSecrets(d.apiservers, addrs); err != nil {
		return err
	}
	arch := d.arch
	if arch == "" {
		if arch, err = c.Arch(ctx); err != nil {
			return err
		}
	}
	bin, err := images.KubeAPIServerBinary(ctx, arch, nil)
	if err != nil {
		return err
	}
	for _, s := range d.sec.Serving {
		if err := d.install(ctx, c, s, bin); err != nil {
			return err
		}
	}
	if err := d.etcd.Setup(ctx, c, d.etcdNodes); err != nil {
		return err
	}
	// All start at once and are then waited for: on a loaded machine
	// three API servers started one after another would triple the wait.
	for _, n := range d.apiservers {
		if err := backends.StartDaemon(ctx, c, n, apiserverName, d.apiserverArgs(n), nodes.ExecOptions{}); err != nil {
			return err
		}
	}
	for _, n := range d.apiservers {
		if err := d.waitReady(ctx, c, n); err != nil {
			return err
		}
	}
	return nil
}

// install copies the binary, the node's own serving certificate and key,
// and the shared service-account key and token file into one API server
// node.
func (d *DB) install(ctx context.Context, c nodes.Nodes, s servingCert, bin []byte) error {
	files := []struct {
		path string
		data []byte
		mode int64
	}{
		{apiserverBinary, bin, 0o755},
		{apiserverCert, s.CertPEM, 0o644},
		{apiserverKey, s.KeyPEM, 0o600},
		{apiserverSAKey, d.sec.ServiceAccountKeyPEM, 0o600},
		// One user, an administrator: the run's own network is the only
		// one that reaches the servers.
		{apiserverTokens, []byte(d.sec.Token + `,fencecheck,fencecheck,"system:masters"` + "\n"), 0o600},
	}
	res, err := c.Exec(ctx, s.Node, []string{"mkdir", "-p", apiserverDir})
	if err != nil || res.ExitCode != 0 {
		return fmt.Errorf("making %s in %s: %v %s", apiserverDir, s.Node, err, res.Stderr)
	}
	for _, f := range files {
		if err := c.CopyTo(ctx, s.Node, f.path, f.data, f.mode); err != nil {
			return fmt.Errorf("copying %s into %s: %w", f.path, s.Node, err)
		}
	}
	return nil
}

// apiserverArgs are node's API server's flags: etcd's members (the same
// for every API server), a static token, RBAC, its own serving
// certificate and the service-account key it insists on.
func (d *DB) apiserverArgs(node string) []string {
	var members []string
	for _, n := range d.etcdNodes {
		members = append(members, fmt.Sprintf("http://%s:%d", n, etcd.ClientPort))
	}
	return []string{apiserverBinary,
		"--etcd-servers=" + strings.Join(members, ","),
		fmt.Sprintf("--secure-port=%d", APIServerPort),
		"--bind-address=0.0.0.0",
		"--advertise-address=" + d.ips[node],
		"--tls-cert-file=" + apiserverCert,
		"--tls-private-key-file=" + apiserverKey,
		"--token-auth-file=" + apiserverTokens,
		"--authorization-mode=RBAC",
		"--service-account-key-file=" + apiserverSAKey,
		"--service-account-signing-key-file=" + apiserverSAKey,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.96.0.0/24",
	}
}

// startAPIServer starts node's API server and waits until it is ready.
func (d *DB) startAPIServer(ctx context.Context, c nodes.Nodes, node string) error {
	if err := backends.StartDaemon(ctx, c, node, apiserverName, d.apiserverArgs(node), nodes.ExecOptions{}); err != nil {
		return err
	}
	return d.waitReady(ctx, c, node)
}

// waitReady waits until node's API server answers /readyz with 200
// (asked inside its node, trusting only its own certificate).
func (d *DB) waitReady(ctx context.Context, c nodes.Nodes, node string) error {
	return backends.WaitUntil(ctx, c, node, apiserverName, d.probe("/readyz", false), 90*time.Second)
}

func (d *DB) probe(path string, printBody bool) []string {
	cmd := []string{nodes.BinaryPath, "probe", "--timeout", "2s", "--ca", apiserverCert}
	if printBody {
		cmd = append(cmd, "--print")
	}
	return append(cmd, fmt.Sprintf("https://127.0.0.1:%d%s", APIServerPort, path))
}

// Endpoints are the API servers' URLs, in node order: a built-in client
// speaks to one of them (clientconf.APIServerFor), a --client program is
// given all.
func (d *DB) Endpoints() []string {
	var out []string
	for _, n := range d.apiservers {
		out = append(out, fmt.Sprintf("https://%s:%d", n, APIServerPort))
	}
	return out
}

// Kill SIGKILLs node's server: the API server on an API server node, etcd
// on the others.
func (d *DB) Kill(ctx context.Context, c nodes.Nodes, node string) error {
	if d.isAPIServer(node) {
		return backends.KillDaemon(ctx, c, node, apiserverName)
	}
	return d.etcd.Kill(ctx, c, node)
}

// Start starts node's server again with its data (and an API server
// with its certificate and the cluster's token).
func (d *DB) Start(ctx context.Context, c nodes.Nodes, node string) error {
	if d.isAPIServer(node) {
		return d.startAPIServer(ctx, c, node)
	}
	return d.etcd.Start(ctx, c, node)
}

// Primary is etcd's leader: the one node whose isolation stops every
// write (API servers have no leader among themselves).
func (d *DB) Primary(ctx context.Context, c nodes.Nodes) (string, error) {
	return d.etcd.Primary(ctx, c)
}

func (d *DB) LogFiles() []string { return []string{backends.LogDir} }

func (d *DB) Info() map[string]string {
	election := clientconf.TimingFor(d.LeaseTTL).String()
	if d.Client != "" {
		election = clientNote(d.Client)
	}
	info := map[string]string{
		"lock service": fmt.Sprintf("kube-apiserver %s (compiled from the Go module proxy) on %s, in front of etcd %s on %s",
			images.KubeAPIServerVersion, strings.Join(d.apiservers, ", "), images.EtcdImageVersion, strings.Join(d.etcdNodes, ", ")),
		"leader election": election,
	}
	if note := apiserversNote(d.apiserverCount(), d.Client); note != "" {
		info["API servers"] = note
	}
	return info
}

// clientNote says who runs the election in a --client run.
func clientNote(name string) string {
	return fmt.Sprintf("run by client %s itself, with its own durations (its init says lease_ttl_ms and gives it the API server's URL, a bearer token and the certificate to trust)", name)
}

// apiserversNote says, with more than one API server, that they share
// etcd and which one each client speaks to; "" with one.
func apiserversNote(n int, client string) string {
	if n <= 1 {
		return ""
	}
	who := fmt.Sprintf("client process p speaks to API server p mod %d only (client-go's rest.Config has one Host: no spreading or failover within a client)", n)
	if client != "" {
		who = fmt.Sprintf("client %s is given every API server's URL (init's service.endpoints, all behind one token and one certificate bundle) and picks itself", client)
	}
	return fmt.Sprintf("%d kube-apiservers in front of the same etcd, so a Lease's resourceVersion-conditional updates stay linearizable whichever serves them; %s", n, who)
}

// ClientSecret is the token and certificate the clients need, as the
// agent program reads them (clientconf.Secret).
func (d *DB) ClientSecret() string {
	if d.sec == nil {
		return ""
	}
	return clientconf.Secret{Token: d.sec.Token, CA: string(d.sec.CABundle())}.Encode()
}

// BearerAuth is the token and the certificates to trust (every API
// server's, one PEM after another), for a --client program's init
// (service.bearer_token, service.ca).
func (d *DB) BearerAuth() (token, caPEM string) {
	if d.sec == nil {
		return "", ""
	}
	return d.sec.Token, string(d.sec.CABundle())
}

// VersionQuery says how AskVersion asks.
const VersionQuery = "GET /version on each API server (gitVersion), GET /version on each etcd member's client port (etcdserver)"

// AskVersion asks node's server what it is: an API server's /version
// (gitVersion, stamped at compile time), or etcd's. Each answer is
// prefixed by the server's name, since one run has both.
func (d *DB) AskVersion(ctx context.Context, c nodes.Nodes, node string) (backends.ServerVersion, error) {
	if !d.isAPIServer(node) {
		v, err := d.etcd.AskVersion(ctx, c, node)
		if err == nil {
			v.Version = "etcd " + v.Version
		}
		return v, err
	}
	out, err := backends.AskInNode(ctx, c, node, d.probe("/version", true))
	if err != nil {
		return backends.ServerVersion{}, err
	}
	return parseVersion(node, out)
}

func parseVersion(node, body string) (backends.ServerVersion, error) {
	var v struct {
		GitVersion string `json:"gitVersion"`
	}
	body = strings.TrimSpace(body)
	if err := json.Unmarshal([]byte(body), &v); err != nil || v.GitVersion == "" {
		if len(body) > 200 {
			body = body[:200] + "..."
		}
		return backends.ServerVersion{}, fmt.Errorf("%s: /version answered %q", node, body)
	}
	return backends.ServerVersion{Answer: body, Version: "kube-apiserver " + v.GitVersion}, nil
}
