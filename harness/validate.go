package harness

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/internal/units"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/runstore"
)

// validate checks every field up front and names the flag at fault: first
// what the backend and its servers are asked (validateService), then the
// workload's and the check's bounds (validateBounds).
func (t *Test) validate() error {
	if err := t.checkEndpoints(); err != nil {
		return err
	}
	if err := t.checkHosts(); err != nil {
		return err
	}
	if err := t.validateService(); err != nil {
		return err
	}
	return t.cfg.validateBounds(t.info)
}

// validateService checks the backend, the --client program, recipe,
// storage, cluster, server version and image, nodes, the backends' and
// the client side's flags, the fencing mode and the faults.
func (t *Test) validateService() error {
	c, b := &t.cfg, t.info
	if !t.known {
		return unknownBackend(c.Backend)
	}
	if err := t.checkClient(); err != nil {
		return err
	}
	if !slices.Contains(b.Recipes, c.Recipe) {
		return usage.Errorf("recipe", "backend %s has no recipe %q (accepted: %s)", c.Backend, c.Recipe, strings.Join(b.Recipes, ", "))
	}
	if err := c.checkStorage(b); err != nil {
		return err
	}
	if !slices.Contains(b.Clusters, c.Cluster) {
		return usage.Errorf("cluster", "backend %s cannot run on cluster %q (accepted: %s)", c.Backend, c.Cluster, joinClusters(b.Clusters))
	}
	if err := c.checkServerVersion(b); err != nil {
		return err
	}
	for _, check := range []func(registry.Info) error{c.checkServerImage, c.checkPowerLayer, c.checkNodes, c.checkOptions, c.checkClientSide} {
		if err := check(b); err != nil {
			return err
		}
	}
	mode, err := fenced.ParseMode(c.Fencing)
	if err != nil {
		return usage.Errorf("fencing", "%v", err)
	}
	t.mode = mode
	return t.checkFaults()
}

// checkStorage: a shared storage, or one of the backend's own (where the
// lock itself guards the resource, so --fencing means nothing).
func (c *Config) checkStorage(b registry.Info) error {
	shared := registry.IsSharedStorage(c.Storage)
	if !shared && !slices.Contains(b.Storages, c.Storage) {
		accepted := append(registry.SharedStorages(), b.Storages...)
		return usage.Errorf("storage", "backend %s cannot use storage %q (accepted: %s; a backend's own storage, such as etcd, needs that backend)", c.Backend, c.Storage, strings.Join(accepted, ", "))
	}
	if !shared && c.Fencing != "none" {
		return usage.Errorf("fencing", "storage %s guards the resource with the lock itself: --fencing applies to the shared storages (%s) only; drop it", c.Storage, strings.Join(registry.SharedStorages(), ", "))
	}
	if shared && c.Cluster == registry.ClusterInProcess && c.Storage != registry.DefaultStorage {
		return usage.Errorf("storage", "storage %s needs --cluster docker", c.Storage)
	}
	return nil
}

// checkServerVersion: one of the backend's builds, or the default.
func (c *Config) checkServerVersion(b registry.Info) error {
	defaultVersion := c.ServerVersion == "" || c.ServerVersion == registry.DefaultVersion
	if len(b.Versions) > 0 && !defaultVersion && !slices.Contains(b.Versions, c.ServerVersion) {
		if b.Releases != nil {
			return checkRelease(c.Backend, c.ServerVersion, b)
		}
		return usage.Errorf("server-version", "backend %s has no server version %q (accepted: %s, or %s for %s)", c.Backend, c.ServerVersion,
			strings.Join(b.Versions, ", "), registry.DefaultVersion, b.Versions[0])
	}
	if len(b.Versions) == 0 && !defaultVersion {
		return usage.Errorf("server-version", "backend %s has one server build (%s); drop the flag", c.Backend, cmp.Or(b.Builds[registry.DefaultVersion], registry.DefaultVersion))
	}
	return nil
}

// validateBounds checks the workload's sizes and times, the check's
// bounds and the store, each against its range.
func (c *Config) validateBounds(b registry.Info) error {
	if c.Clients < 1 || c.Clients > 100 {
		return usage.Errorf("clients", "%d is out of range (accepted: 1 to 100)", c.Clients)
	}
	if c.Keys < 1 || c.Keys > 1000 {
		return usage.Errorf("keys", "%d is out of range (accepted: 1 to 1000)", c.Keys)
	}
	if c.TimeLimit < time.Second || c.TimeLimit > 24*time.Hour {
		return usage.Errorf("time-limit", "%s is out of range (accepted: 1s to 24h, e.g. 30s)", c.TimeLimit)
	}
	if c.LeaseTTL < b.MinTTL || c.LeaseTTL > 10*time.Minute {
		return usage.Errorf("lease-ttl", "%s is out of range for %s (accepted: %s to 10m)", c.LeaseTTL, c.Backend, b.MinTTL)
	}
	if c.Work < 0 || c.Work > time.Minute {
		return usage.Errorf("work", "%s is out of range (accepted: 0 to 1m)", c.Work)
	}
	if c.Dwell < 0 || c.Dwell > time.Minute {
		return usage.Errorf("hold", "%s is out of range (accepted: 0 to 1m, e.g. 500ms)", c.Dwell)
	}
	if err := c.checkReadMix(); err != nil {
		return err
	}
	if err := c.checkFaultTimes(); err != nil {
		return err
	}
	if err := c.checkTimeouts(); err != nil {
		return err
	}
	if c.Cluster == registry.ClusterInProcess {
		for _, flag := range []string{"keep-cluster", "fresh-cluster", "agent-binary"} {
			if c.Given[flag] {
				return usage.Errorf(flag, "an in-process run has no Docker cluster or client containers; drop the flag (or run on --cluster docker)")
			}
		}
	}
	if c.Store == "" {
		return usage.Errorf("store", "must name a directory")
	}
	return checkName(c.Name)
}

// checkFaultTimes checks the pause duration, the exposures asked for and
// the nemesis interval.
func (c *Config) checkFaultTimes() error {
	if c.PauseDuration <= 0 {
		return usage.Errorf("pause-duration", "%s: must be positive; leave the flag out for the default, 2 × lease-ttl (here %s)", c.PauseDuration, 2*c.LeaseTTL)
	}
	if c.Exposures < 0 {
		return usage.Errorf("exposures", "must be 0 (off) or more, got %d (e.g. --exposures 100 --time-limit 30m: run until 100 holders were exposed, at most 30 minutes)", c.Exposures)
	}
	if c.MinExposures < 0 {
		return usage.Errorf("min-exposures", "must be 0 or more, got %d (0 lets a run that put safety at stake nowhere pass; 1 asks for at least one)", c.MinExposures)
	}
	if c.Given["pause-duration"] && !nemesis.Injects(c.Nemesis) {
		return usage.Errorf("pause-duration", "--nemesis %s injects no faults, so nothing is paused or held; drop the flag, or add a fault to --nemesis", nemesis.None)
	}
	if c.NemesisInterval < 100*time.Millisecond {
		return usage.Errorf("nemesis-interval", "%s is too short (accepted: at least 100ms)", c.NemesisInterval)
	}
	return nil
}

// checkTimeouts checks the op, acquire and check timeouts and the
// check's memory bound.
func (c *Config) checkTimeouts() error {
	if c.OpTimeout > 0 && c.OpTimeout <= c.PauseDuration {
		return usage.Errorf("op-timeout", "%s must be longer than the pause duration %s, or paused clients' ops end as info", c.OpTimeout, c.PauseDuration)
	}
	if c.AcquireTimeout != 0 && (c.AcquireTimeout < 100*time.Millisecond || (c.OpTimeout > 0 && c.AcquireTimeout > c.OpTimeout)) {
		return usage.Errorf("acquire-timeout", "%s is out of range (accepted: 100ms up to the op timeout, here %s, e.g. 5s as Jepsen's etcd client; leave the flag out to wait the op timeout)", c.AcquireTimeout, c.OpTimeout)
	}
	if c.CheckTimeout < time.Second {
		return usage.Errorf("check-timeout", "%s is too short (accepted: at least 1s)", c.CheckTimeout)
	}
	if c.CheckMemory < MinCheckMemory {
		return usage.Errorf("check-memory", "%s is too small (accepted: at least %s, e.g. 4GiB)", units.FormatBytes(c.CheckMemory), units.FormatBytes(MinCheckMemory))
	}
	return nil
}

// checkClient: --client DIR runs a user's program as every client, so
// only what that program can talk to is accepted: a Docker cluster, and the
// fenced storage's HTTP API or a storage the program writes with its own
// fence check (registry.ClientStorage), where --fencing means nothing. The
// directory and its manifest were read by newTest, before anything is
// created; a failure to read them is refused here.
func (t *Test) checkClient() error {
	c, b := &t.cfg, t.info
	if c.ClientDir == "" {
		return nil
	}
	switch {
	case b.ClosedToClients != "":
		return usage.Errorf("client", "%s; test your client against a real service: --backend %s", b.ClosedToClients, registry.OrList(registry.OpenToClients()))
	case c.Cluster == registry.ClusterInProcess:
		return usage.Errorf("client", "an in-process run has no servers your client could speak to; test your client on --cluster docker against a real service: --backend %s", registry.OrList(registry.OpenToClients()))
	case c.Given["recipe"]:
		return usage.Errorf("recipe", "--recipe picks one of fencecheck's own lock recipes; with --client your program is the recipe. Drop --recipe")
	case c.Storage != registry.DefaultStorage:
		// A storage this backend cannot use at all is checkStorage's to
		// refuse.
		_, ok := b.ClientStorage(c.Storage)
		if !ok && (registry.IsSharedStorage(c.Storage) || slices.Contains(b.Storages, c.Storage)) {
			return usage.Errorf("storage", "with --client your program writes to the fenced storage node (%s)%s; storage %s is reached only through fencecheck's own recipes (docs/client-protocol.md)",
				registry.DefaultStorage, orOwn(b.ClientStorageNames()), c.Storage)
		}
		if ok && c.Given["fencing"] {
			return usage.Errorf("fencing", "with --client and --storage %s your program checks the token itself (its own statement or transaction), and that check is what the run tests; the storage checks nothing of its own, so --fencing has nothing to set. Drop --fencing", c.Storage)
		}
	}
	if t.clientErr != nil {
		return usage.Errorf("client", "%v", t.clientErr)
	}
	return nil
}

// checkReadMix: --read-mix is a share in [0, 1), and only fencecheck's own
// agent knows how to read without the lock.
func (c *Config) checkReadMix() error {
	if !(c.ReadMix >= 0 && c.ReadMix < 1) { // NaN too
		return usage.Errorf("read-mix", "%v is out of range (accepted: 0 to below 1, the share of ops that read without the lock, e.g. 0.5 as in Jepsen's lock-set workload; 0, the default, takes the lock for every op)", c.ReadMix)
	}
	if c.ReadMix > 0 && c.ClientDir != "" {
		return usage.Errorf("read-mix", "a lock-free read is an op of fencecheck's own client (read-lock-free, which the client protocol does not ask of yours): with --client every op is a locked section. Drop --read-mix, or drop --client to run the built-in recipe")
	}
	return nil
}

// orOwn names the storages a --client program writes to with its own
// fence check, for a message.
func orOwn(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return " or, with its own fence check, " + registry.OrList(names)
}

// checkNodes: --nodes applies to the backends with a choice of cluster
// size; elsewhere the count is fixed (one server, or the recipe's), and a
// given --nodes is refused as --server-version and --redis-persistence
// are where they mean nothing.
func (c *Config) checkNodes(b registry.Info) error {
	if len(b.Nodes) == 0 {
		if !c.Given["nodes"] {
			return nil
		}
		if c.ClientDir != "" && len(b.ClientNodes) > 0 {
			if !slices.Contains(b.ClientNodes, c.Nodes) {
				return usage.Errorf("nodes", "with --client, backend %s runs %s servers, not %d (--nodes 5 for a Redlock client)", c.Backend, words.OrList(strings.Split(joinInts(b.ClientNodes), ", ")), c.Nodes)
			}
			return nil
		}
		if b.FixedNodes != "" {
			return usage.Errorf("nodes", "%s", b.FixedNodes)
		}
		return usage.Errorf("nodes", "backend %s runs one server; drop the flag", c.Backend)
	}
	if (c.Cluster == registry.ClusterDocker || c.Given["nodes"]) && !slices.Contains(b.Nodes, c.Nodes) {
		why := ""
		if b.NodesWhy != "" {
			why = ": " + b.NodesWhy
		}
		return usage.Errorf("nodes", "backend %s cannot run on %s (accepted: %s)%s", c.Backend, words.Plural(c.Nodes, "server node"), joinInts(b.Nodes), why)
	}
	return nil
}

// checkOptions: a backend's own flag (Info.Flags) is refused with any
// other backend, and checked by its backend; a flag no backend or fault
// has is refused.
func (c *Config) checkOptions(b registry.Info) error {
	own := map[string]string{}
	for flag, v := range c.Options {
		// A fault's own flag is the faults' to judge (checkFaults).
		if len(nemesis.FlagOwners(flag)) == 0 {
			own[flag] = v
		}
	}
	return registry.CheckFlags(b.Name, own)
}

// checkClientSide checks --lease-check and --client-endpoints: what the
// built-in client checks of its lease, and which servers each client
// speaks to.
func (c *Config) checkClientSide(b registry.Info) error {
	if !slices.Contains(registry.LeaseChecks, c.LeaseCheck) {
		return usage.Errorf("lease-check", "unknown value %q (accepted: %s)", c.LeaseCheck, strings.Join(registry.LeaseChecks, ", "))
	}
	if c.ClientDir != "" && c.Given["lease-check"] {
		return usage.Errorf("lease-check", "with --client your program is the recipe, and what it checks of its lease is its own; drop --lease-check")
	}
	switch c.ClientEndpoints {
	case ClientEndpointsAll:
	case ClientEndpointsOne:
		if !b.OneEndpoint {
			return usage.Errorf("client-endpoints", "one: %s; drop the flag (or use --backend %s)", b.AllEndpoints, registry.OrList(oneEndpointBackends()))
		}
		if c.Cluster == registry.ClusterInProcess {
			return usage.Errorf("client-endpoints", "an in-process run has no servers to bind a client to; drop the flag (or run on --cluster docker)")
		}
	default:
		return usage.Errorf("client-endpoints", "unknown value %q (accepted: %s, %s)", c.ClientEndpoints, ClientEndpointsAll, ClientEndpointsOne)
	}
	return nil
}

// oneEndpointBackends names the backends whose clients can be bound to one
// server.
func oneEndpointBackends() []string {
	var out []string
	for _, b := range registry.All() {
		if b.OneEndpoint {
			out = append(out, b.Name)
		}
	}
	return out
}

func joinClusters(cs []registry.Cluster) string {
	var s []string
	for _, c := range cs {
		s = append(s, string(c))
	}
	return strings.Join(s, ", ")
}

func joinInts(ns []int) string {
	var s []string
	for _, n := range ns {
		s = append(s, fmt.Sprint(n))
	}
	return strings.Join(s, ", ")
}

// checkName: the test's name is one directory in the store, so it must be
// a single path element, and not the store's latest link.
func checkName(name string) error {
	bad := name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`)
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			bad = true
		}
	}
	switch {
	case bad:
		return usage.Errorf("name", "%q is not one name: the test's name is a directory in the store, so it must not be empty, . or .., nor contain a slash, a backslash or a control character (e.g. --name etcd-nightly)", name)
	case name == runstore.Latest:
		return usage.Errorf("name", "latest is taken: store/latest points at the newest run; choose another name")
	}
	return nil
}

// checkPowerLayer refuses --power-layer where the layer cannot go, before
// anything is created: off Docker, a backend whose servers keep nothing
// on disk, and servers run from an image (the layer is laid over the node
// image's data directory, which an image's server does not use).
func (c *Config) checkPowerLayer(b registry.Info) error {
	switch {
	case !c.PowerLayer:
		return nil
	case b.DataDir == "":
		return usage.Errorf("power-layer", "backend %s's servers keep nothing on a disk in their nodes, so there is no data directory to lay the layer over: drop the flag, or use a backend with one (etcd, zookeeper, postgres, redis, nats)", c.Backend)
	case c.Cluster != registry.ClusterDocker:
		return usage.Errorf("power-layer", "the layer is mounted in Docker server nodes: add --cluster docker or drop the flag")
	case c.ServerImage != "":
		return usage.Errorf("power-layer", "the layer is laid over the node image's data directory, which a server run from an image does not use: drop --server-image or the flag")
	}
	return nil
}

// checkServerImage refuses --server-image where it cannot work, before
// anything is created: a backend that has no image conventions, an
// in-process run, a server version beside it (the image decides), and a
// fault that prepares the servers (nemesis.Prepares: it changes how their
// process starts, which an image's own entrypoint decides).
func (c *Config) checkServerImage(b registry.Info) error {
	if c.ServerImage == "" {
		return nil
	}
	var can []string
	for _, o := range registry.All() {
		if o.ServerImage != "" {
			can = append(can, o.Name)
		}
	}
	switch {
	case strings.TrimSpace(c.ServerImage) != c.ServerImage || strings.ContainsAny(c.ServerImage, " \t\n"):
		return usage.Errorf("server-image", "%q is not an image reference (e.g. gcr.io/etcd-development/etcd:v3.6.16)", c.ServerImage)
	case b.ServerImage == "":
		return usage.Errorf("server-image", "backend %s cannot run its servers from an image yet (accepted with: %s); drop the flag", c.Backend, strings.Join(can, ", "))
	case c.Cluster != registry.ClusterDocker:
		return usage.Errorf("server-image", "an image runs in Docker: add --cluster docker or drop the flag")
	case c.Given["server-version"]:
		return usage.Errorf("server-version", "the server image %s decides the server's version (recorded from the servers' own answer): drop --server-version", c.ServerImage)
	}
	for _, f := range c.Nemesis {
		if nemesis.Prepares([]string{f}) {
			return usage.Errorf("nemesis", "%s cannot reach a server run from an image: the fault prepares the server nodes before their servers start (how the server's process starts, or the filesystem under its data directory), and a server in its image's own container passes through neither; drop --server-image or the fault", f)
		}
	}
	return nil
}
