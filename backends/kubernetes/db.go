// Package kubernetes tests Kubernetes leader election: a real
// kube-apiserver (compiled from the Go module proxy on first use) in
// front of a 3-member etcd cluster, and clients that each run client-go's
// own tools/leaderelection with a LeaseLock on a coordination.k8s.io/v1
// Lease, the fencing token being the Lease's spec.leaseTransitions as the
// winner read it back. It must never re-implement the election: acquire,
// renew, expiry and release are client-go's code, and this package only
// watches its callbacks and reads the Lease.
package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/etcd"
	"github.com/fencecheck/fencecheck/compose/engine"
	"github.com/fencecheck/fencecheck/compose/images"
)

// APIServerPort is the API server's secure port in its node.
const APIServerPort = 6443

// EtcdMembers is the size of the etcd cluster behind the API server.
const EtcdMembers = 3

// Where the API server's files live in its node: the binary, and its
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
// as the etcd backend runs it (the node image's etcd 3.6), and one
// kube-apiserver on the last server node, its own container, so that a
// fault aimed at a server node reaches either an etcd member or the API
// server and never both at once, and the API server's memory is its
// container's.
type DB struct {
	TestID   string
	LeaseTTL time.Duration
	// Client is the --client program's name, "" when fencecheck's own
	// agents run the election: the report then names the program, not
	// client-go's durations it does not choose.
	Client string

	etcd      *etcd.DB
	arch      string
	etcdNodes []string
	apiserver string
	ip        string
	sec       *secrets
}

// NewDB is the cluster for a run with lease ttl.
func NewDB(testID string, ttl time.Duration) *DB {
	return &DB{TestID: testID, LeaseTTL: ttl, etcd: &etcd.DB{Version: images.EtcdImageVersion, TestID: testID}}
}

// Prepare compiles (or finds in the cache) the API server before the
// cluster exists, so its compile shows in the image phase with its time.
func (d *DB) Prepare(ctx context.Context, arch string, progress io.Writer) error {
	d.arch = arch
	_, err := images.KubeAPIServerBinary(ctx, arch, progress)
	return err
}

func (d *DB) Setup(ctx context.Context, c *engine.Cluster, nodes []string) error {
	if c.ServerImage() != "" {
		return fmt.Errorf("backend kubernetes runs its own etcd and kube-apiserver builds; --server-image is not accepted")
	}
	if len(nodes) != EtcdMembers+1 {
		return fmt.Errorf("backend kubernetes needs %d server nodes (%d etcd members and the API server), got %d", EtcdMembers+1, EtcdMembers, len(nodes))
	}
	d.etcdNodes, d.apiserver = nodes[:EtcdMembers], nodes[EtcdMembers]
	ips, err := backends.NodeIPs(c, []string{d.apiserver})
	if err != nil {
		return err
	}
	d.ip = ips[d.apiserver]
	if d.sec, err = newSecrets(d.apiserver, d.ip); err != nil {
		return err
	}
	arch := d.arch
	if arch == "" {
		if arch, err = c.EngineArch(ctx); err != nil {
			return err
		}
	}
	bin, err := images.KubeAPIServerBinary(ctx, arch, nil)
	if err != nil {
		return err
	}
	files := []struct {
		path string
		data []byte
		mode int64
	}{
		{apiserverBinary, bin, 0o755},
		{apiserverCert, d.sec.CertPEM, 0o644},
		{apiserverKey, d.sec.KeyPEM, 0o600},
		{apiserverSAKey, d.sec.ServiceAccountKeyPEM, 0o600},
		// One user, an administrator: the run's own network is the only
		// one that reaches the server.
		{apiserverTokens, []byte(d.sec.Token + `,fencecheck,fencecheck,"system:masters"` + "\n"), 0o600},
	}
	res, err := c.Exec(ctx, d.apiserver, []string{"mkdir", "-p", apiserverDir})
	if err != nil || res.ExitCode != 0 {
		return fmt.Errorf("making %s in %s: %v %s", apiserverDir, d.apiserver, err, res.Stderr)
	}
	for _, f := range files {
		if err := c.CopyTo(ctx, d.apiserver, f.path, f.data, f.mode); err != nil {
			return fmt.Errorf("copying %s into %s: %w", f.path, d.apiserver, err)
		}
	}
	if err := d.etcd.Setup(ctx, c, d.etcdNodes); err != nil {
		return err
	}
	return d.startAPIServer(ctx, c)
}

// apiserverArgs are the API server's flags: etcd's members, a static
// token, RBAC, the per-cluster serving certificate and the
// service-account key it insists on.
func (d *DB) apiserverArgs() []string {
	var members []string
	for _, n := range d.etcdNodes {
		members = append(members, fmt.Sprintf("http://%s:%d", n, etcd.ClientPort))
	}
	return []string{apiserverBinary,
		"--etcd-servers=" + strings.Join(members, ","),
		fmt.Sprintf("--secure-port=%d", APIServerPort),
		"--bind-address=0.0.0.0",
		"--advertise-address=" + d.ip,
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

// startAPIServer starts the API server and waits until /readyz answers
// 200 (asked inside its node, trusting only the cluster's certificate).
func (d *DB) startAPIServer(ctx context.Context, c *engine.Cluster) error {
	if err := backends.StartDaemon(ctx, c, d.apiserver, apiserverName, d.apiserverArgs(), engine.ExecOptions{}); err != nil {
		return err
	}
	return backends.WaitUntil(ctx, c, d.apiserver, apiserverName, d.probe("/readyz", false), 90*time.Second)
}

func (d *DB) probe(path string, printBody bool) []string {
	cmd := []string{engine.BinaryPath, "probe", "--timeout", "2s", "--ca", apiserverCert}
	if printBody {
		cmd = append(cmd, "--print")
	}
	return append(cmd, fmt.Sprintf("https://127.0.0.1:%d%s", APIServerPort, path))
}

// Endpoints is the API server's URL.
func (d *DB) Endpoints() []string {
	return []string{fmt.Sprintf("https://%s:%d", d.apiserver, APIServerPort)}
}

// Kill SIGKILLs node's server: the API server on its node, etcd on the
// others.
func (d *DB) Kill(ctx context.Context, c *engine.Cluster, node string) error {
	if node == d.apiserver {
		return backends.KillDaemon(ctx, c, node, apiserverName)
	}
	return d.etcd.Kill(ctx, c, node)
}

// Start starts node's server again with its data (and the API server
// with the cluster's certificate and token).
func (d *DB) Start(ctx context.Context, c *engine.Cluster, node string) error {
	if node == d.apiserver {
		return d.startAPIServer(ctx, c)
	}
	return d.etcd.Start(ctx, c, node)
}

// Primary is etcd's leader: the one node whose isolation stops every
// write (the API server itself has no leader).
func (d *DB) Primary(ctx context.Context, c *engine.Cluster) (string, error) {
	return d.etcd.Primary(ctx, c)
}

func (d *DB) LogFiles() []string { return []string{backends.LogDir} }

func (d *DB) Info() map[string]string {
	election := TimingFor(d.LeaseTTL).String()
	if d.Client != "" {
		election = clientNote(d.Client)
	}
	return map[string]string{
		"lock service": fmt.Sprintf("kube-apiserver %s (compiled from the Go module proxy) on %s, in front of etcd %s on %s",
			images.KubeAPIServerVersion, d.apiserver, images.EtcdImageVersion, strings.Join(d.etcdNodes, ", ")),
		"leader election": election,
	}
}

// clientNote says who runs the election in a --client run.
func clientNote(name string) string {
	return fmt.Sprintf("run by client %s itself, with its own durations (its init says lease_ttl_ms and gives it the API server's URL, a bearer token and the certificate to trust)", name)
}

// ClientSecret is the token and certificate the clients need, as JSON
// (clientSecret).
func (d *DB) ClientSecret() string {
	if d.sec == nil {
		return ""
	}
	b, _ := json.Marshal(clientSecret{Token: d.sec.Token, CA: string(d.sec.CertPEM)})
	return string(b)
}

// BearerAuth is the token and the certificate to trust, for a --client
// program's init (service.bearer_token, service.ca).
func (d *DB) BearerAuth() (token, caPEM string) {
	if d.sec == nil {
		return "", ""
	}
	return d.sec.Token, string(d.sec.CertPEM)
}

// clientSecret is ClientSpec.ServiceSecret's content.
type clientSecret struct {
	Token string `json:"token"`
	CA    string `json:"ca"`
}

// VersionQuery says how AskVersion asks.
const VersionQuery = "GET /version on the API server (gitVersion), GET /version on each etcd member's client port (etcdserver)"

// AskVersion asks node's server what it is: the API server's /version
// (gitVersion, stamped at compile time), or etcd's. Each answer is
// prefixed by the server's name, since one run has both.
func (d *DB) AskVersion(ctx context.Context, c *engine.Cluster, node string) (backends.ServerVersion, error) {
	if node != d.apiserver {
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
