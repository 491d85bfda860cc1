package sshnodes

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// keyFiles writes a private key and an empty known_hosts file, for
// inventories that must parse.
func keyFiles(t *testing.T) (key, known string) {
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
	key = filepath.Join(dir, "id")
	known = filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(key, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(known, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return key, known
}

// inventory is a file with key: and known_hosts: filled in.
func inventory(t *testing.T, body string) string {
	key, known := keyFiles(t)
	return "known_hosts: " + known + "\nkey: " + key + "\n" + body
}

const threeHosts = `user: root
hosts:
  - address: 10.0.0.12:22
    role: server
  - address: 10.0.0.11
    role: server
    name: n1
  - address: 10.0.0.20:2222
    role: storage
    wipe: true
  - address: 10.0.0.30:22
    role: client
`

func TestParseNamesHostsAndFillsDefaults(t *testing.T) {
	inv, err := Parse([]byte(inventory(t, threeHosts)), "hosts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range inv.Hosts {
		got = append(got, h.Name+"="+h.Address+"/"+h.Peer+"/"+h.Role+"/"+h.Mode+"/"+h.Freezer)
	}
	want := []string{
		"n1=10.0.0.11:22/10.0.0.11/server/install/auto",
		"n2=10.0.0.12:22/10.0.0.12/server/install/auto",
		"storage=10.0.0.20:2222/10.0.0.20/storage/install/auto",
		"c1=10.0.0.30:22/10.0.0.30/client/install/auto",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("hosts:\n got %v\nwant %v", got, want)
	}
	if s, _ := inv.Host("storage"); !s.Wipe || s.User != "root" {
		t.Errorf("storage: wipe %v user %q, want true and root", s.Wipe, s.User)
	}
	if err := inv.Check(DefaultWant); err != nil {
		t.Errorf("Check: %v", err)
	}
	if err := inv.Check(Want{Servers: 3, Storage: 1, Clients: 1}); err == nil ||
		!strings.Contains(err.Error(), "role server: the run needs 3, the inventory has 2: add a host with role: server") {
		t.Errorf("Check of 3 servers: %v", err)
	}
}

// Each bad inventory is refused with a message naming the host, the field
// and the fix.
func TestParseRefusesWithHostFieldAndFix(t *testing.T) {
	for name, tc := range map[string]struct{ body, want string }{
		"unknown field": {`hosts:
  - address: 10.0.0.1:22
    user: root
    role: server
    rol: client
`, `host 1 (line 4): unknown field "rol" (line 7): the fields are name, address, user, key, role, peer`},
		"unknown top field": {"users: root\nhosts: []\n", `the top level: unknown field "users" (line 3)`},
		"missing role": {`hosts:
  - address: 10.0.0.1:22
    user: root
`, "host 1 (10.0.0.1:22, line 4): role: missing: write role: server, storage or client"},
		"bad role": {`hosts:
  - {address: 10.0.0.1:22, user: root, role: db}
`, `role: "db" is not a role`},
		"duplicate names": {`user: root
hosts:
  - {address: 10.0.0.1:22, role: server, name: n1}
  - {address: 10.0.0.2:22, role: server, name: n1}
`, "host n1 (10.0.0.2:22, line 6): name: n1 is named twice"},
		"duplicate address": {`user: root
hosts:
  - {address: 10.0.0.1:22, role: server}
  - {address: 10.0.0.1:22, role: client}
`, "host c1 (10.0.0.1:22, line 6): address: 10.0.0.1:22 is also host n1 (10.0.0.1:22, line 5)'s"},
		"name of another role": {`user: root
hosts:
  - {address: 10.0.0.1:22, role: client, name: n1}
`, `name: "n1" is not a client's name: clients are c1, c2`},
		"two storage": {`user: root
hosts:
  - {address: 10.0.0.1:22, role: storage}
  - {address: 10.0.0.2:22, role: storage}
`, "role: a second storage host"},
		"no user": {`hosts:
  - {address: 10.0.0.1:22, role: server}
`, "user: missing: write the SSH login"},
		"peer is a name": {`user: root
hosts:
  - {address: db1.example:22, role: server}
`, "peer: missing, and the address db1.example is a name: write peer:"},
		"bad port": {`user: root
hosts:
  - {address: "10.0.0.1:99999", role: server}
`, `address: port "99999" is not a port`},
		"adopted and wiped": {`user: root
hosts:
  - {address: 10.0.0.1:22, role: server, mode: adopt, wipe: true, data_dir: /var/lib/etcd, restart: systemctl restart etcd}
`, "wipe: true on an adopted server: its data is the user's and is never wiped; write wipe: false"},
		"adopted without data dir": {`user: root
hosts:
  - {address: 10.0.0.1:22, role: server, mode: adopt}
`, "data_dir: missing for an adopted server"},
		"restart on an installed host": {`user: root
hosts:
  - {address: 10.0.0.1:22, role: server, restart: systemctl restart etcd}
`, "restart: only an adopted server has one"},
		"adopted client": {`user: root
hosts:
  - {address: 10.0.0.1:22, role: client, mode: adopt}
`, "mode: adopt is for servers"},
		"bad freezer": {`user: root
hosts:
  - {address: 10.0.0.1:22, role: server, freezer: cgroup}
`, `freezer: "cgroup" is not a freezer`},
		"no hosts": {"user: root\n", "hosts: none listed"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(inventory(t, tc.body)), "hosts.yaml")
			if err == nil {
				t.Fatalf("parsed; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "hosts.yaml: ") {
				t.Errorf("error:\n%v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

func TestParseNamesEveryProblemAtOnce(t *testing.T) {
	_, err := Parse([]byte(inventory(t, `hosts:
  - {address: 10.0.0.1:22, role: server}
  - {address: 10.0.0.2:22, role: nurse, user: root}
`)), "hosts.yaml")
	if err == nil || !strings.Contains(err.Error(), "2 problems") || !strings.Contains(err.Error(), "user: missing") ||
		!strings.Contains(err.Error(), `"nurse" is not a role`) {
		t.Fatalf("error: %v", err)
	}
}

func TestParseKeyProblems(t *testing.T) {
	_, known := keyFiles(t)
	t.Setenv("SSH_AUTH_SOCK", "")
	_, err := Parse([]byte("known_hosts: "+known+"\nuser: root\nhosts:\n  - {address: 10.0.0.1:22, role: server}\n"), "")
	if err == nil || !strings.Contains(err.Error(), "key: missing, and no SSH agent (SSH_AUTH_SOCK is unset)") {
		t.Errorf("no key, no agent: %v", err)
	}
	_, err = Parse([]byte("known_hosts: "+known+"\nuser: root\nkey: /nonexistent/id\nhosts:\n  - {address: 10.0.0.1:22, role: server}\n"), "")
	if err == nil || !strings.Contains(err.Error(), "host 1 (10.0.0.1:22, line 5): key: open /nonexistent/id") {
		t.Errorf("missing key file: %v", err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(t.TempDir(), "locked")
	os.WriteFile(locked, pem.EncodeToMemory(block), 0o600)
	_, err = Parse([]byte("known_hosts: "+known+"\nuser: root\nkey: "+locked+"\nhosts:\n  - {address: 10.0.0.1:22, role: server}\n"), "")
	if err == nil || !strings.Contains(err.Error(), "is protected by a passphrase: add it to ssh-agent") {
		t.Errorf("passphrase: %v", err)
	}
	_, err = Parse([]byte("known_hosts: /nonexistent/known\nuser: root\nhosts:\n  - {address: 10.0.0.1:22, role: server}\n"), "")
	if err == nil || !strings.Contains(err.Error(), "known_hosts: stat /nonexistent/known") {
		t.Errorf("missing known_hosts: %v", err)
	}
}

func TestCheckFaultsRefusesAdoptedHostsWithoutRestart(t *testing.T) {
	inv, err := Parse([]byte(inventory(t, `user: root
hosts:
  - {address: 10.0.0.1:22, role: server, mode: adopt, data_dir: /var/lib/etcd}
  - {address: 10.0.0.2:22, role: server, mode: adopt, data_dir: /var/lib/etcd, restart: systemctl restart etcd}
  - {address: 10.0.0.3:22, role: server}
`)), "hosts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := inv.CheckFaults([]string{"pause", "partition", "pause-holder"}); err != nil {
		t.Errorf("faults that restart nothing: %v", err)
	}
	err = inv.CheckFaults([]string{"pause", "kill"})
	if err == nil {
		t.Fatal("kill on an adopted server without restart was allowed")
	}
	msg := err.Error()
	if !strings.Contains(msg, "host n1 (10.0.0.1:22, line 5): restart: missing, and the fault kill kills the server and starts it again: write restart:") {
		t.Errorf("error: %v", err)
	}
	if strings.Contains(msg, "n2") || strings.Contains(msg, "n3") {
		t.Errorf("error names a host with a restart, or an installed one: %v", err)
	}
	if !NeedsRestart("power-loss-all") || NeedsRestart("pause-holder") {
		t.Error("NeedsRestart: power-loss-all needs one, pause-holder does not")
	}
}

func TestChainNameFitsIptables(t *testing.T) {
	for _, id := range []string{"it-0123abcd", "postgresql-192233.123-2", strings.Repeat("x", 64)} {
		c := ChainName(id)
		if len(c) > 28 || !strings.HasPrefix(c, "fencecheck-") {
			t.Errorf("ChainName(%q) = %q: want fencecheck-..., at most 28 characters", id, c)
		}
	}
	if ChainName("a") == ChainName("b") || ChainName(strings.Repeat("x", 40)) == ChainName(strings.Repeat("x", 41)) {
		t.Error("two ids share a chain")
	}
}

func TestGoArch(t *testing.T) {
	for m, want := range map[string]string{"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "riscv64": "riscv64"} {
		if got := goArch(m); got != want {
			t.Errorf("goArch(%q) = %q, want %q", m, got, want)
		}
	}
}

// A host nothing listens at is named, with the dial's error (on the
// loopback: nothing leaves this machine).
func TestCheckReachableNamesTheHost(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	inv, err := Parse([]byte(inventory(t, "user: root\nhosts:\n  - {address: "+addr+", role: server}\n")), "hosts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	err = CheckReachable(context.Background(), inv)
	if err == nil || !strings.Contains(err.Error(), "host n1 ("+addr+", line 5) cannot be reached: dial tcp "+addr+": connect: connection refused") {
		t.Errorf("CheckReachable: %v", err)
	}
	if _, err := Open(context.Background(), inv, "t1", Options{}); err == nil || !strings.Contains(err.Error(), "cannot be reached") {
		t.Errorf("Open: %v", err)
	}
}
