package harness

import (
	"fmt"
	"strings"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/compose/sshnodes"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/nemesis"
)

// notOnHostsYet are the flags a run on hosts refuses, with why: each sets
// up something only the Docker driver has (or has not been built over
// SSH yet).
var notOnHostsYet = []struct{ flag, why string }{
	{"endpoints", "tests servers already running, by address alone; --hosts runs servers fencecheck installs on your hosts: give one of the two"},
	{"endpoints-network", "joins client containers to a Docker network; on hosts there are no containers"},
	{"server-image", "runs the servers from an image in containers beside the nodes, which only Docker nodes can"},
	{"power-layer", "mounts the power faults' filesystem layer over the data directory, which is not built for hosts yet (FUSE on each host)"},
	{"keep-cluster", "keeps Docker containers up; on hosts the test's processes are killed and its rules removed at the end, always"},
	{"fresh-cluster", "chooses between a warm Docker cluster and a new one; hosts are never kept warm"},
	{"client", "runs a --client program in client containers built from its manifest; installing one on hosts is not built yet"},
}

// checkHosts reads --hosts and refuses, before anything is touched, what
// a run on the user's own hosts cannot do: a file with a problem (every
// problem named, by host, line, field and fix), a role the run lacks
// hosts for, a flag that sets up what only Docker has, a backend or
// server build that cannot be installed on a bare host, a storage other
// than the fenced node, a fault not built over SSH, and a fault that
// restarts an adopted server with no restart command. Without --nodes
// and --clients the run takes every server and client host of the file;
// with them, the first ones.
func (t *Test) checkHosts() error {
	c := &t.cfg
	if c.Hosts == "" {
		if c.Given["hosts"] {
			return usage.Errorf("hosts", "empty: name the inventory file of your hosts (docs/real-nodes.md shows one for three VMs)")
		}
		return nil
	}
	if !t.known {
		return nil // validateService names the unknown backend
	}
	for _, f := range notOnHostsYet {
		if c.Given[f.flag] || (f.flag == "endpoints" && len(c.Endpoints) > 0) || (f.flag == "client" && c.ClientDir != "") {
			return usage.Errorf(f.flag, "cannot go with --hosts: it %s; drop --%s", f.why, f.flag)
		}
	}
	if c.Cluster == registry.ClusterInProcess {
		return usage.Errorf("cluster", "with --hosts the servers, storage and clients run on your hosts: drop --cluster %s", c.Cluster)
	}
	b := t.info
	if b.NewDB == nil {
		return usage.Errorf("hosts", "backend %s runs in process only: it has no servers to put on hosts", c.Backend)
	}
	if b.Agent != nil {
		return usage.Errorf("hosts", "backend %s's clients run in a program of their own (%s), which is not installed on hosts yet; backends on hosts so far: %s", c.Backend, b.Agent.Name, strings.Join(hostBackends(), ", "))
	}
	if c.Storage != registry.DefaultStorage {
		return usage.Errorf("storage", "%s cannot be installed on hosts yet: the storage host runs fencecheck's own fenced storage (--storage %s), the check binary", c.Storage, registry.DefaultStorage)
	}
	inv, err := sshnodes.Load(c.Hosts)
	if err != nil {
		return usage.Errorf("hosts", "%v", err)
	}
	count := map[string]int{}
	for _, h := range inv.Hosts {
		count[h.Role]++
	}
	if !c.Given["nodes"] && count[nodes.RoleServer] > 0 {
		c.Nodes = count[nodes.RoleServer]
	}
	if !c.Given["clients"] && count[nodes.RoleClient] > 0 {
		c.Clients = count[nodes.RoleClient]
	}
	if err := c.checkNodes(b); err != nil {
		return err
	}
	db, servers, err := b.NewDB(t.setup(""))
	if err != nil {
		return err
	}
	bi, ok := db.(backends.BareInstaller)
	if !ok {
		return usage.Errorf("hosts", "backend %s cannot be installed on hosts yet (its servers come from the node image's Debian packages); backends on hosts so far: %s", c.Backend, strings.Join(hostBackends(), ", "))
	}
	if err := bi.OnBare(); err != nil {
		return usage.Errorf("server-version", "%v", err)
	}
	if err := inv.Check(sshnodes.Want{Servers: servers, Storage: 1, Clients: c.Clients}); err != nil {
		return usage.Errorf("hosts", "%v", err)
	}
	if err := nemesis.CheckOnHosts(c.Nemesis); err != nil {
		return faultUsage(err)
	}
	if err := inv.CheckFaults(c.Nemesis); err != nil {
		return usage.Errorf("hosts", "%v", err)
	}
	for _, h := range inv.Hosts {
		if h.Adopted() {
			return usage.Errorf("hosts", "%s: mode: adopt is not built yet: fencecheck installs and starts the servers itself (mode: install); test a server already running by its endpoints (--endpoints) instead", hostLabel(inv, h))
		}
	}
	t.inv = cutInventory(inv, servers, c.Clients)
	return nil
}

// cutInventory keeps the hosts a run uses: the first servers and
// clients of each role (in the order of the names), and the storage.
func cutInventory(inv *sshnodes.Inventory, servers, clients int) *sshnodes.Inventory {
	out := *inv
	out.Hosts = nil
	n := map[string]int{}
	for _, h := range inv.Hosts {
		n[h.Role]++
		switch {
		case h.Role == nodes.RoleServer && n[h.Role] > servers:
		case h.Role == nodes.RoleClient && n[h.Role] > clients:
		case h.Role == nodes.RoleStorage && n[h.Role] > 1:
		default:
			out.Hosts = append(out.Hosts, h)
		}
	}
	return &out
}

// hostLabel names a host of the file in a message.
func hostLabel(inv *sshnodes.Inventory, h sshnodes.Host) string {
	return fmt.Sprintf("%s: host %s (%s)", inv.Path, h.Name, h.Address)
}

// hostBackends lists the backends whose servers can be installed on
// hosts at their default build.
func hostBackends() []string {
	var out []string
	for _, b := range registry.All() {
		if b.NewDB == nil || b.Agent != nil {
			continue
		}
		setup := registry.Setup{Recipe: b.Recipes[0], ServerVersion: registry.DefaultVersion, Nodes: 3}
		if len(b.Versions) > 0 {
			setup.ServerVersion = b.Versions[0]
		}
		if len(b.Nodes) > 0 {
			setup.Nodes = b.Nodes[0]
		}
		db, _, err := b.NewDB(setup)
		if err != nil {
			continue
		}
		if bi, ok := db.(backends.BareInstaller); ok && bi.OnBare() == nil {
			out = append(out, b.Name)
		}
	}
	return out
}
