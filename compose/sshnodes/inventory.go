package sshnodes

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/crypto/ssh"
	"gopkg.in/yaml.v3"

	"github.com/fencecheck/fencecheck/compose/nodes"
)

// Modes of a server host.
const (
	// ModeInstall: fencecheck installs and starts the lock server itself,
	// under the test's own directories (the default).
	ModeInstall = "install"
	// ModeAdopt: the user's server, already running, started again by the
	// inventory's restart command; its data is never wiped.
	ModeAdopt = "adopt"
)

// Freezers a host may ask for.
const (
	// FreezerAuto: the cgroup freezer where a cgroup is writable, else
	// SIGSTOP (the default).
	FreezerAuto = "auto"
	// FreezerSignal: SIGSTOP and SIGCONT to the process groups fencecheck
	// started, even where a cgroup is writable (a host whose cgroups
	// fencecheck must not touch).
	FreezerSignal = "signal"
)

// Inventory is the hosts of a test as the user describes them: the file
// --hosts names.
type Inventory struct {
	// Path is the file it was read from ("" when parsed from memory),
	// for messages.
	Path string
	// KnownHosts are the known_hosts files the hosts' keys are checked
	// against (known_hosts:, default ~/.ssh/known_hosts).
	KnownHosts []string
	// Hosts are in the order of All: servers (n1..), storage, clients
	// (c1..).
	Hosts []Host
}

// Host is one host of the inventory.
type Host struct {
	// Name is what fencecheck calls it: n1.. for servers, storage, c1..
	// for clients. When the file leaves it out, hosts get the first free
	// names of their role in the file's order.
	Name string
	// Address is where the control machine reaches its sshd, host:port.
	Address string
	// User is the SSH login; root, or a user with password-less sudo.
	User string
	// Key is a private key file; "" for the SSH agent (SSH_AUTH_SOCK).
	Key string
	// Role is nodes.RoleServer, RoleStorage or RoleClient.
	Role string
	// Peer is the IP address the other hosts reach it at (the partition
	// rules drop it); the address's host when that is an IP.
	Peer string
	// Wipe: fencecheck may remove what it installed and the data it
	// wrote. Never true for an adopted host.
	Wipe bool
	// Mode is ModeInstall or ModeAdopt (servers only).
	Mode string
	// Restart is the command that starts an adopted server again (e.g.
	// `systemctl restart etcd`).
	Restart string
	// DataDir is the service's data directory on the host.
	DataDir string
	// Freezer is FreezerAuto or FreezerSignal.
	Freezer string

	line  int // in the file, for messages
	index int // 1-based, in the file
}

// Adopted reports whether the host's server is the user's own.
func (h Host) Adopted() bool { return h.Mode == ModeAdopt }

// label names the host in a message: its name (once known), its place in
// the file, and its address.
func (h Host) label() string {
	var parts []string
	if h.Address != "" {
		parts = append(parts, h.Address)
	}
	if h.line > 0 {
		parts = append(parts, fmt.Sprintf("line %d", h.line))
	}
	who := fmt.Sprintf("host %d", h.index)
	if h.Name != "" {
		who = "host " + h.Name
	}
	if len(parts) == 0 {
		return who
	}
	return who + " (" + strings.Join(parts, ", ") + ")"
}

// The fields of the file, for the unknown-field check and its message.
var (
	topFields  = []string{"known_hosts", "user", "key", "mode", "hosts"}
	hostFields = []string{"name", "address", "user", "key", "role", "peer", "wipe", "mode", "restart", "data_dir", "freezer"}
)

type fileTop struct {
	KnownHosts yaml.Node  `yaml:"known_hosts"`
	User       string     `yaml:"user"`
	Key        string     `yaml:"key"`
	Mode       string     `yaml:"mode"`
	Hosts      []fileHost `yaml:"hosts"`
}

type fileHost struct {
	Name    string `yaml:"name"`
	Address string `yaml:"address"`
	User    string `yaml:"user"`
	Key     string `yaml:"key"`
	Role    string `yaml:"role"`
	Peer    string `yaml:"peer"`
	Wipe    *bool  `yaml:"wipe"`
	Mode    string `yaml:"mode"`
	Restart string `yaml:"restart"`
	DataDir string `yaml:"data_dir"`
	Freezer string `yaml:"freezer"`
}

// Load reads and parses the inventory file path.
func Load(path string) (*Inventory, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("the hosts file: %w", err)
	}
	return Parse(b, path)
}

// Parse reads an inventory. Every problem of the file is named in the
// error, one a line, each with the host, the field and what to write
// instead: unknown fields, a missing or unknown role, an address without
// a port, duplicate names or addresses, a key that cannot be read, an
// adopted host that may be wiped. Roles are counted by Check, restarts by
// CheckFaults, and the hosts reached by CheckReachable.
func Parse(data []byte, path string) (*Inventory, error) {
	where := path
	if where == "" {
		where = "the hosts file"
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: not YAML: %s", where, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%s: empty: list the hosts under hosts:, each with address, user, role (see docs/real-nodes.md)", where)
	}
	var probs []string
	top := doc.Content[0]
	if top.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: line %d: want a mapping with hosts: (see docs/real-nodes.md)", where, top.Line)
	}
	probs = append(probs, unknownFields(top, topFields, "the top level")...)
	if hosts := mappingValue(top, "hosts"); hosts != nil && hosts.Kind == yaml.SequenceNode {
		for i, h := range hosts.Content {
			if h.Kind != yaml.MappingNode {
				probs = append(probs, fmt.Sprintf("host %d (line %d): want a mapping of fields (address:, user:, role:, ...)", i+1, h.Line))
				continue
			}
			probs = append(probs, unknownFields(h, hostFields, fmt.Sprintf("host %d (line %d)", i+1, h.Line))...)
		}
	}
	if len(probs) > 0 {
		return nil, problems(where, probs)
	}
	var f fileTop
	if err := top.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %s", where, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	inv := &Inventory{Path: path}
	switch f.KnownHosts.Kind {
	case 0:
	case yaml.ScalarNode:
		inv.KnownHosts = []string{f.KnownHosts.Value}
	case yaml.SequenceNode:
		if err := f.KnownHosts.Decode(&inv.KnownHosts); err != nil {
			probs = append(probs, fmt.Sprintf("known_hosts (line %d): want a file or a list of files", f.KnownHosts.Line))
		}
	default:
		probs = append(probs, fmt.Sprintf("known_hosts (line %d): want a file or a list of files", f.KnownHosts.Line))
	}
	if len(inv.KnownHosts) == 0 {
		home, err := os.UserHomeDir()
		if err != nil {
			probs = append(probs, "known_hosts: no home directory to find ~/.ssh/known_hosts in: name the file with known_hosts:")
		} else {
			inv.KnownHosts = []string{filepath.Join(home, ".ssh", "known_hosts")}
		}
	}
	for i, k := range inv.KnownHosts {
		inv.KnownHosts[i] = expandHome(k)
		if _, err := os.Stat(inv.KnownHosts[i]); err != nil {
			probs = append(probs, fmt.Sprintf("known_hosts: %v: the hosts' keys are checked against it; add them with ssh-keyscan HOST >> %s after checking them", err, inv.KnownHosts[i]))
		}
	}
	if len(f.Hosts) == 0 {
		probs = append(probs, "hosts: none listed: list each host with address, user and role (see docs/real-nodes.md)")
	}
	hostNodes := mappingValue(top, "hosts")
	for i, fh := range f.Hosts {
		h := Host{
			Name: strings.TrimSpace(fh.Name), Address: strings.TrimSpace(fh.Address), User: fh.User, Key: fh.Key,
			Role: fh.Role, Peer: strings.TrimSpace(fh.Peer), Mode: fh.Mode, Restart: strings.TrimSpace(fh.Restart),
			DataDir: fh.DataDir, Freezer: fh.Freezer, index: i + 1,
		}
		if hostNodes != nil && i < len(hostNodes.Content) {
			h.line = hostNodes.Content[i].Line
		}
		if h.User == "" {
			h.User = f.User
		}
		if h.Key == "" {
			h.Key = f.Key
		}
		if h.Mode == "" {
			h.Mode = f.Mode
		}
		probs = append(probs, fillHost(&h, fh.Wipe)...)
		inv.Hosts = append(inv.Hosts, h)
	}
	probs = append(probs, assignNames(inv.Hosts)...)
	probs = append(probs, duplicates(inv.Hosts)...)
	if len(probs) > 0 {
		return nil, problems(where, probs)
	}
	sort.SliceStable(inv.Hosts, func(i, j int) bool { return nodeOrder(inv.Hosts[i].Name) < nodeOrder(inv.Hosts[j].Name) })
	return inv, nil
}

// fillHost checks one host's fields and fills in its defaults.
func fillHost(h *Host, wipe *bool) []string {
	var probs []string
	bad := func(format string, args ...any) { probs = append(probs, h.label()+": "+fmt.Sprintf(format, args...)) }
	switch h.Role {
	case nodes.RoleServer, nodes.RoleStorage, nodes.RoleClient:
	case "":
		bad("role: missing: write role: server, storage or client")
	default:
		bad("role: %q is not a role: write server, storage or client", h.Role)
	}
	if h.Address == "" {
		bad("address: missing: write the host's sshd as host:port, e.g. 10.0.0.11:22")
	} else {
		hostPart, port, err := net.SplitHostPort(h.Address)
		if err != nil {
			// A bare host (or IPv6 address) gets sshd's port.
			if ip := net.ParseIP(strings.Trim(h.Address, "[]")); ip != nil || !strings.Contains(h.Address, ":") {
				hostPart, port = strings.Trim(h.Address, "[]"), "22"
				h.Address = net.JoinHostPort(hostPart, port)
			} else {
				bad("address: %q is not host:port: write e.g. 10.0.0.11:22", h.Address)
			}
		}
		if n, err := strconv.Atoi(port); port != "" && (err != nil || n < 1 || n > 65535) {
			bad("address: port %q is not a port: write a number from 1 to 65535", port)
		}
		if h.Peer == "" && hostPart != "" {
			if net.ParseIP(hostPart) == nil {
				bad("peer: missing, and the address %s is a name: write peer: the IP address the other hosts reach it at", hostPart)
			} else {
				h.Peer = hostPart
			}
		}
	}
	if h.Peer != "" && net.ParseIP(h.Peer) == nil {
		bad("peer: %q is not an IP address: write the address the other hosts reach it at (the partitions drop it by address)", h.Peer)
	}
	if h.User == "" {
		bad("user: missing: write the SSH login (root, or a user with password-less sudo), here or at the top level")
	}
	if h.Key != "" {
		h.Key = expandHome(h.Key)
		if err := checkKey(h.Key); err != nil {
			bad("key: %v", err)
		}
	} else if os.Getenv("SSH_AUTH_SOCK") == "" {
		bad("key: missing, and no SSH agent (SSH_AUTH_SOCK is unset): write key: the private key file, or start ssh-agent and add the key")
	}
	switch h.Mode {
	case "":
		h.Mode = ModeInstall
	case ModeInstall, ModeAdopt:
	default:
		bad("mode: %q is not a mode: write install (fencecheck installs the server) or adopt (the server already runs)", h.Mode)
	}
	if h.Mode == ModeAdopt && h.Role != nodes.RoleServer && h.Role != "" {
		bad("mode: adopt is for servers: fencecheck runs its own %s; leave mode out", h.Role)
	}
	if h.Restart != "" && h.Mode != ModeAdopt {
		bad("restart: only an adopted server has one (fencecheck starts what it installs itself): leave it out, or write mode: adopt")
	}
	if wipe != nil {
		h.Wipe = *wipe
	}
	if h.Wipe && h.Mode == ModeAdopt {
		bad("wipe: true on an adopted server: its data is the user's and is never wiped; write wipe: false")
	}
	if h.Mode == ModeAdopt && h.DataDir == "" {
		bad("data_dir: missing for an adopted server: write the directory its data lives in (it is never wiped)")
	}
	if h.DataDir != "" && !strings.HasPrefix(h.DataDir, "/") {
		bad("data_dir: %q is not an absolute path: write it from /", h.DataDir)
	}
	switch h.Freezer {
	case "":
		h.Freezer = FreezerAuto
	case FreezerAuto, FreezerSignal:
	default:
		bad("freezer: %q is not a freezer: write auto (the cgroup freezer where it can) or signal (SIGSTOP)", h.Freezer)
	}
	return probs
}

// checkKey reads a private key file the way the driver will.
func checkKey(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if _, err := ssh.ParsePrivateKey(b); err != nil {
		var pp *ssh.PassphraseMissingError
		if errors.As(err, &pp) {
			return fmt.Errorf("%s is protected by a passphrase: add it to ssh-agent and leave key out (fencecheck never prompts)", path)
		}
		return fmt.Errorf("%s is not a private key ssh can read: %v", path, err)
	}
	return nil
}

// assignNames checks the names given and gives the others the first free
// names of their role, in the file's order.
func assignNames(hosts []Host) []string {
	var probs []string
	taken := map[string]bool{}
	for i := range hosts {
		h := &hosts[i]
		if h.Name == "" {
			continue
		}
		if want := roleOf(h.Name); want != h.Role && h.Role != "" {
			probs = append(probs, h.label()+": name: "+nameRule(h.Role, h.Name))
			continue
		}
		if taken[h.Name] {
			probs = append(probs, fmt.Sprintf("%s: name: %s is named twice: give each host its own name, or leave name out", h.label(), h.Name))
			continue
		}
		taken[h.Name] = true
	}
	next := map[string]int{}
	for i := range hosts {
		h := &hosts[i]
		if h.Name != "" || h.Role == "" {
			continue
		}
		switch h.Role {
		case nodes.RoleStorage:
			if taken["storage"] {
				continue // duplicates says so
			}
			h.Name = "storage"
		case nodes.RoleServer, nodes.RoleClient:
			prefix := "n"
			if h.Role == nodes.RoleClient {
				prefix = "c"
			}
			for {
				next[prefix]++
				if name := fmt.Sprintf("%s%d", prefix, next[prefix]); !taken[name] {
					h.Name = name
					break
				}
			}
		default:
			continue
		}
		taken[h.Name] = true
	}
	return probs
}

// nameRule says what a host of role may be named.
func nameRule(role, name string) string {
	switch role {
	case nodes.RoleServer:
		return fmt.Sprintf("%q is not a server's name: servers are n1, n2, ... (what histories and faults call them); leave name out to number them in order", name)
	case nodes.RoleStorage:
		return fmt.Sprintf("%q is not the storage's name: it is storage; leave name out", name)
	default:
		return fmt.Sprintf("%q is not a client's name: clients are c1, c2, ...; leave name out to number them in order", name)
	}
}

// roleOf is the role a node name belongs to ("" for none).
func roleOf(name string) string {
	switch {
	case name == "storage":
		return nodes.RoleStorage
	case numbered(name, "n"):
		return nodes.RoleServer
	case numbered(name, "c"):
		return nodes.RoleClient
	}
	return ""
}

// numbered reports whether name is prefix and a number from 1 without
// leading zeros.
func numbered(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || rest == "" || rest[0] == '0' {
		return false
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}

// nodeOrder sorts names as All lists them: n1..nN, storage, c1..cM.
func nodeOrder(name string) int {
	switch {
	case numbered(name, "n"):
		n, _ := strconv.Atoi(name[1:])
		return n
	case name == "storage":
		return 1 << 20
	case numbered(name, "c"):
		n, _ := strconv.Atoi(name[1:])
		return 1<<20 + n
	}
	return 1 << 30
}

// duplicates names a second storage host and two hosts with one address.
func duplicates(hosts []Host) []string {
	var probs []string
	storage := ""
	addr := map[string]string{}
	peer := map[string]string{}
	for _, h := range hosts {
		if h.Role == nodes.RoleStorage {
			if storage != "" {
				probs = append(probs, fmt.Sprintf("%s: role: a second storage host (the first is %s): a test has one fenced storage; make this one a server or a client", h.label(), storage))
			} else {
				storage = h.label()
			}
		}
		if h.Address != "" {
			if other, ok := addr[h.Address]; ok {
				probs = append(probs, fmt.Sprintf("%s: address: %s is also %s's: each node is a host of its own", h.label(), h.Address, other))
				continue
			}
			addr[h.Address] = h.label()
		}
		if h.Peer != "" {
			if other, ok := peer[h.Peer]; ok {
				probs = append(probs, fmt.Sprintf("%s: peer: %s is also %s's: a partition could not tell them apart; each node is a host of its own", h.label(), h.Peer, other))
			} else {
				peer[h.Peer] = h.label()
			}
		}
	}
	return probs
}

// Want is how many hosts of each role a run needs.
type Want struct {
	Servers, Storage, Clients int
}

// DefaultWant is a run's least: a server, the storage, a client.
var DefaultWant = Want{Servers: 1, Storage: 1, Clients: 1}

// Check says which roles the inventory lacks for a run that needs want.
func (inv *Inventory) Check(want Want) error {
	count := map[string]int{}
	for _, h := range inv.Hosts {
		count[h.Role]++
	}
	var probs []string
	for _, r := range []struct {
		role string
		n    int
	}{{nodes.RoleServer, want.Servers}, {nodes.RoleStorage, want.Storage}, {nodes.RoleClient, want.Clients}} {
		if count[r.role] < r.n {
			probs = append(probs, fmt.Sprintf("role %s: the run needs %d, the inventory has %d: add a host with role: %s, or ask for fewer", r.role, r.n, count[r.role], r.role))
		}
	}
	if len(probs) > 0 {
		return problems(inv.where(), probs)
	}
	return nil
}

// FaultsNeedingRestart are the faults that stop a lock server and start
// it again, with why: on an adopted server they need the inventory's
// restart command.
var FaultsNeedingRestart = map[string]string{
	"kill":                "kills the server and starts it again",
	"kill-leader":         "kills the leading server and starts it again",
	"power-loss":          "cuts a server's power and starts it again",
	"power-loss-leader":   "cuts the leader's power and starts it again",
	"power-loss-majority": "cuts a majority's power and starts them again",
	"power-loss-all":      "cuts every server's power and starts them again",
	"failpoint":           "crashes a server at a failpoint and starts it again",
	"clock-jump":          "starts the server again under libfaketime",
	"clock-skew":          "starts the server again under libfaketime",
	"clock-strobe":        "starts the server again under libfaketime",
	"clock-jump-quorum":   "starts the servers again under libfaketime",
}

// NeedsRestart reports whether the fault named restarts a server.
func NeedsRestart(fault string) bool {
	_, ok := FaultsNeedingRestart[fault]
	return ok
}

// CheckFaults refuses, by host and fault, the faults that need an
// adopted server started again where the inventory gives no restart
// command.
func (inv *Inventory) CheckFaults(faults []string) error {
	var probs []string
	var need []string
	for _, f := range faults {
		if NeedsRestart(f) && !slices.Contains(need, f) {
			need = append(need, f)
		}
	}
	if len(need) == 0 {
		return nil
	}
	for _, h := range inv.Hosts {
		if !h.Adopted() || h.Restart != "" {
			continue
		}
		for _, f := range need {
			probs = append(probs, fmt.Sprintf("%s: restart: missing, and the fault %s %s: write restart: the command that starts this server (e.g. systemctl restart etcd), or leave %s out",
				h.label(), f, FaultsNeedingRestart[f], f))
		}
	}
	if len(probs) > 0 {
		return problems(inv.where(), probs)
	}
	return nil
}

// Host returns the host named name.
func (inv *Inventory) Host(name string) (Host, bool) {
	for _, h := range inv.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return Host{}, false
}

func (inv *Inventory) where() string {
	if inv.Path == "" {
		return "the hosts file"
	}
	return inv.Path
}

// problems is one error naming every problem, one a line.
func problems(where string, probs []string) error {
	if len(probs) == 1 {
		return fmt.Errorf("%s: %s", where, probs[0])
	}
	return fmt.Errorf("%s: %d problems:\n  %s", where, len(probs), strings.Join(probs, "\n  "))
}

// unknownFields names the keys of m that are not in known.
func unknownFields(m *yaml.Node, known []string, where string) []string {
	var probs []string
	for i := 0; i+1 < len(m.Content); i += 2 {
		k := m.Content[i]
		if !slices.Contains(known, k.Value) {
			probs = append(probs, fmt.Sprintf("%s: unknown field %q (line %d): the fields are %s", where, k.Value, k.Line, strings.Join(known, ", ")))
		}
	}
	return probs
}

// mappingValue is the value of key in mapping m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// expandHome turns a leading ~/ into the home directory.
func expandHome(p string) string {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, err := os.UserHomeDir(); err == nil {
			return filepath.Join(home, rest)
		}
	}
	return p
}
