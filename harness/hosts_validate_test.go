package harness

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/fencecheck/fencecheck/internal/usage"
)

// hostsFile writes an inventory with a key and an empty known_hosts
// filled in, and returns its path.
func hostsFile(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	key, known := filepath.Join(dir, "id"), filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(known, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "hosts.yaml")
	if err := os.WriteFile(file, []byte("known_hosts: "+known+"\nkey: "+key+"\nuser: root\n"+body), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// fiveHosts are three servers, the storage and two clients, each may be
// wiped.
const fiveHosts = `hosts:
  - {address: 10.0.0.11, role: server, wipe: true}
  - {address: 10.0.0.12, role: server, wipe: true}
  - {address: 10.0.0.13, role: server, wipe: true}
  - {address: 10.0.0.20, role: storage, wipe: true}
  - {address: 10.0.0.30, role: client, wipe: true}
  - {address: 10.0.0.31, role: client, wipe: true}
`

// hostsConfig is an etcd run on the hosts of body.
func hostsConfig(t *testing.T, body string, nemesisList ...string) Config {
	cfg := memoryConfig(t, "all", nemesisList...)
	cfg.Backend, cfg.LeaseTTL, cfg.Nodes = "etcd", 2*time.Second, 3
	cfg.Hosts = hostsFile(t, body)
	cfg.Given = map[string]bool{"hosts": true}
	return cfg
}

// A run on hosts takes its servers and clients from the file (without
// --nodes and --clients), the faults built over SSH, and --nodes and
// --clients cutting the file to the first hosts of each role.
func TestHostsAccepted(t *testing.T) {
	for _, f := range []string{"none", "pause-holder", "kill", "partition-one", "partition-client", "pause-all", "kill-leader,partition-halves"} {
		test, err := Resolve(hostsConfig(t, fiveHosts, strings.Split(f, ",")...))
		if err != nil {
			t.Errorf("--nemesis %s: %v", f, err)
			continue
		}
		if c := test.Config(); c.Nodes != 3 || c.Clients != 2 || len(test.inv.Hosts) != 6 {
			t.Errorf("--nemesis %s: %d nodes, %d clients, %d hosts; want the file's 3, 2 and 6", f, c.Nodes, c.Clients, len(test.inv.Hosts))
		}
	}
	cfg := hostsConfig(t, fiveHosts+"  - {address: 10.0.0.14, role: server}\n  - {address: 10.0.0.15, role: server}\n", "pause-holder")
	cfg.Nodes, cfg.Clients, cfg.Given["nodes"], cfg.Given["clients"] = 3, 1, true, true
	test, err := Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range test.inv.Hosts {
		names = append(names, h.Name)
	}
	if got := strings.Join(names, ","); got != "n1,n2,n3,storage,c1" {
		t.Errorf("--nodes 3 --clients 1 on 5 servers and 2 clients: hosts %s, want n1,n2,n3,storage,c1", got)
	}
}

// What a run on hosts cannot do is refused before anything is touched,
// naming the flag, and in the file's problems the host, field and fix.
func TestHostsRefused(t *testing.T) {
	cases := []struct {
		name   string
		body   string
		mutate func(*Config)
		flag   string
		want   []string
	}{
		{"missing role", strings.Replace(fiveHosts, "{address: 10.0.0.31, role: client, wipe: true}", "{address: 10.0.0.31, wipe: true}", 1), nil, "hosts",
			[]string{"host 6 (10.0.0.31, line", "role: missing: write role: server, storage or client"}},
		{"no storage host", strings.Replace(fiveHosts, "role: storage", "role: client", 1), nil, "hosts",
			[]string{"role storage: the run needs 1, the inventory has 0: add a host with role: storage"}},
		{"more clients than hosts", fiveHosts, func(c *Config) { c.Clients, c.Given["clients"] = 5, true }, "hosts",
			[]string{"role client: the run needs 5, the inventory has 2"}},
		{"adopted without restart", fiveHosts + "  - {address: 10.0.0.14, role: server, mode: adopt, data_dir: /var/lib/etcd}\n", func(c *Config) { c.Nemesis = []string{"kill"}; c.Nodes, c.Given["nodes"] = 3, true }, "hosts",
			[]string{"host n4 (10.0.0.14:22, line", "restart: missing, and the fault kill kills the server and starts it again: write restart:"}},
		{"adopted", fiveHosts + "  - {address: 10.0.0.14, role: server, mode: adopt, data_dir: /var/lib/etcd, restart: systemctl restart etcd}\n", func(c *Config) { c.Nodes, c.Given["nodes"] = 3, true }, "hosts",
			[]string{"host n4 (10.0.0.14:22)", "mode: adopt is not built yet"}},
		{"with endpoints", fiveHosts, func(c *Config) { c.Endpoints, c.Given["endpoints"] = []string{"http://a:2379"}, true }, "endpoints", []string{"cannot go with --hosts", "drop --endpoints"}},
		{"server image", fiveHosts, func(c *Config) { c.ServerImage, c.Given["server-image"] = "etcd:v3.6", true }, "server-image", []string{"cannot go with --hosts", "only Docker nodes can"}},
		{"power layer", fiveHosts, func(c *Config) { c.PowerLayer, c.Given["power-layer"] = true, true }, "power-layer", []string{"cannot go with --hosts", "FUSE"}},
		{"etcd 3.4", fiveHosts, func(c *Config) { c.ServerVersion, c.Given["server-version"] = "3.4", true }, "server-version", []string{"etcd 3.4 is Debian's package", "--server-version 3.6"}},
		{"another backend", fiveHosts, func(c *Config) { c.Backend, c.Nodes, c.LeaseTTL = "zookeeper", 3, 2*time.Second }, "hosts", []string{"backend zookeeper cannot be installed on hosts yet", "so far: etcd"}},
		{"another storage", fiveHosts, func(c *Config) { c.Storage, c.Fencing = "etcd", "none" }, "storage", []string{"--storage fenced"}},
		{"empty", "", func(c *Config) { c.Hosts = "" }, "hosts", []string{"empty: name the inventory file"}},
	}
	for _, f := range []struct{ fault, why string }{
		{"latency", "tc netem"}, {"clock-jump", "libfaketime"}, {"power-loss", "FUSE"}, {"failpoint", "not been tried on hosts"},
	} {
		cases = append(cases, struct {
			name   string
			body   string
			mutate func(*Config)
			flag   string
			want   []string
		}{"fault " + f.fault, fiveHosts, func(c *Config) { c.Nemesis = []string{"pause-holder", f.fault} }, "nemesis",
			[]string{"fault " + f.fault + " is not available on hosts (--hosts)", f.why}})
	}
	for _, tc := range cases {
		cfg := hostsConfig(t, tc.body, "pause-holder")
		if tc.mutate != nil {
			tc.mutate(&cfg)
		}
		_, err := Resolve(cfg)
		var ue *usage.Error
		if !errors.As(err, &ue) || ue.Flag != tc.flag {
			t.Errorf("%s: got %v, want a usage error naming --%s", tc.name, err, tc.flag)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, err, w)
			}
		}
	}
}

// A host nothing answers at is named in a usage error (exit 254) when
// the run opens the hosts, before anything is written to any of them (on
// the loopback: nothing leaves this machine).
func TestHostsUnreachableIsBadInput(t *testing.T) {
	var addrs []string
	for i := 0; i < 2; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, l.Addr().String())
		l.Close() // nothing listens there now
	}
	body := "hosts:\n  - {address: " + addrs[0] + ", role: server, peer: 127.0.0.2}\n  - {address: " + addrs[1] + ", role: storage, peer: 127.0.0.3}\n  - {address: " + addrs[1] + ", role: client, peer: 127.0.0.4}\n"
	body = strings.Replace(body, "role: client", "role: client, name: c1", 1)
	cfg := hostsConfig(t, body, "pause-holder")
	// One address per host: the third listens nowhere either.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	third := l.Addr().String()
	l.Close()
	cfg.Hosts = hostsFile(t, strings.Replace(body, "{address: "+addrs[1]+", role: client", "{address: "+third+", role: client", 1))
	_, err = Run(Signals{Stop: context.Background(), Abort: context.Background()}, cfg, nil)
	var ue *usage.Error
	if !errors.As(err, &ue) || ue.Flag != "hosts" {
		t.Fatalf("got %v, want a usage error naming --hosts", err)
	}
	for _, w := range []string{"host n1 (" + addrs[0] + ", line", "cannot be reached", "host storage (" + addrs[1], "host c1 (" + third} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%q does not say %q", err, w)
		}
	}
}
