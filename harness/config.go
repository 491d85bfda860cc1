// Package harness runs a test: it sets up the system under test, drives
// the clients through the workload while the nemesis injects faults,
// records every operation, heals, takes the final reads and hands the
// history to the checker and the reports. Config is what the user asked;
// Run makes a run value (run.go) that holds what the run learns on the
// way and steps through the phases: its own methods tear down, check and
// report, and it hands the setup, the workload (with the nemesis, the heal
// and the final reads) and the servers' versions to free functions that
// take only what they need (openSystem in system.go, runWorkloadPhases in
// phases.go, askServers in versions.go). It owns time, phases and the
// recorder; it never judges a history itself, and never names a backend or
// a fault: what a backend accepts and how it is set up, it asks
// backends/registry; which faults exist, what they need and how they are
// built, it asks nemesis's registry.
package harness

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/clientdir"
	"github.com/fencecheck/fencecheck/internal/units"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/runstore"
)

// Config is one test, as the flags describe it.
type Config struct {
	Backend string
	Recipe  string
	Storage string
	Fencing string
	Nemesis []string
	Clients int
	Keys    int
	Cluster registry.Cluster
	Nodes   int
	// LeaseCheck is what a built-in client checks of its lease:
	// registry.LeaseCheckAll (the default, the careful client) or
	// registry.LeaseCheckNone (it trusts its grant, as Jepsen's did).
	LeaseCheck string
	// ClientEndpoints is "all" (every client is given every server) or
	// "one" (process p speaks only to server p mod n, as Jepsen's
	// clients did); ClientEndpointsAll when empty.
	ClientEndpoints string
	// ServerVersion picks the server build where there are several.
	ServerVersion string
	Seed          int64
	Store         string
	Name          string // the test's name in the store; derived when empty

	TimeLimit       time.Duration
	LeaseTTL        time.Duration
	Work            time.Duration // time a holder spends between its read and its write
	PauseDuration   time.Duration // 0: 2 × LeaseTTL
	NemesisInterval time.Duration
	OpTimeout       time.Duration // 0: derived from the pause duration
	// AcquireTimeout bounds a workload section's acquire alone (0: the op
	// timeout): past it the client gives up waiting for the lock, and the
	// section ends without a read or write. Jepsen's etcd client waits 5 s
	// for its Lock call (every etcd call of its client has that timeout)
	// and then fails the add. The final reads wait the op timeout.
	AcquireTimeout time.Duration
	CheckTimeout   time.Duration
	// Dwell (--hold) adds a uniformly random time in [0, Dwell] to Work
	// in each section: a critical section that takes time, which is where
	// a random pause can land.
	Dwell time.Duration
	// ReadMix is the share of the workload's ops that read the storage
	// without taking the lock, drawn per op (Jepsen's lock-set workload
	// mixes such reads with its locked adds, about half and half): 0 (every
	// op a locked section) to below 1. A lock-free read presents no token,
	// so the storage never refuses it and it moves no fence; the history
	// records it as a read by a process that holds no lock
	// (docs/history.md).
	ReadMix float64
	// CheckMemory bounds the check's heap in bytes (0: DefaultCheckMemory).
	CheckMemory int64
	// StopOnViolation ends the workload as soon as the live check finds a
	// violation (then heal, final reads, check, report, as at the time
	// limit).
	StopOnViolation bool
	// MinExposures is the least number of exposures (moments a superseded
	// holder's late op met the storage; models.Exposures) a valid run
	// needs; a run with fewer is unknown. When --min-exposures is not
	// given, Defaults sets it: 1 under a fault aimed at a holder
	// (nemesis.AimedAtHolders), else 0.
	MinExposures int
	// Exposures, when above 0, ends the workload once that many exposures
	// were seen (or at TimeLimit, whichever comes first): a user asks for
	// "100 frozen holders" instead of guessing a duration.
	Exposures int

	// Command is the command line that reruns the test, for the report,
	// quoted as a POSIX shell reads it; CommandArgv is the same as a list
	// of arguments.
	Command     string
	CommandArgv []string
	// Options are the backends' and the faults' own flags by name
	// (registry.Info.Flags, e.g. redis-persistence: what the Redis servers
	// keep on disk; nemesis.Kind.Flags); a flag left out is absent or "".
	Options map[string]string
	// JUnit, when set, is where a JUnit XML report goes (one test case
	// per key), for CI systems.
	JUnit string
	// KeepCluster leaves the Docker cluster up after the run (healed), for
	// a look inside; `check cluster down` removes it.
	KeepCluster bool
	// ServerImage runs the lock service's servers from this image (the
	// user's, following the official image's conventions; see
	// registry.Info.ServerImage), in place of the node image's build.
	ServerImage string
	// FreshCluster gives the run a new cluster even where a warm one of an
	// earlier run of the same process would do (check compare,
	// --test-count; see Clusters).
	FreshCluster bool
	// VerboseBuild streams the output of the image builds and compiles a
	// run needs (debootstrap, apt, go, docker) instead of one line per step.
	VerboseBuild bool
	// NoNetworkDelay drops the in-process backend's simulated network
	// delay, so a benchmark measures the harness alone.
	NoNetworkDelay bool
	// ClientDir is a user's lock client directory (`--client DIR`,
	// docs/client-protocol.md): its program runs in place of the built-in
	// agent. Validate loads it.
	ClientDir string
	// AgentBinary is the static check binary copied into the containers
	// (default: FENCECHECK_BINARY, else this executable).
	AgentBinary string
	// Given names the flags the command line set explicitly. A flag that
	// means nothing for this test (--nodes on a backend whose server
	// count is fixed, --pause-duration without faults) is refused only
	// when given, so the defaults never fail.
	Given map[string]bool

	// mode is Fencing parsed; Validate sets it.
	mode fenced.Mode
	// client is ClientDir loaded; Validate sets it.
	client *clientdir.Client
}

// setup is what the backend is told about this test.
func (c *Config) setup(testID string) registry.Setup {
	return registry.Setup{Recipe: c.Recipe, ServerVersion: c.ServerVersion, Nodes: c.Nodes, LeaseTTL: c.LeaseTTL,
		Fencing: c.mode, Options: c.Options, TestID: testID, NoNetworkDelay: c.NoNetworkDelay, ClientServers: c.clientServers(), Client: c.clientName()}
}

// clientName is the --client program's name, "" without one (or before
// Validate has read its manifest).
func (c *Config) clientName() string {
	if c.client == nil {
		return ""
	}
	return c.client.Manifest.Name
}

// clientServers is the server count a --client run asked for with
// --nodes on a backend that lets it (registry.Info.ClientNodes), else 0.
func (c *Config) clientServers() int {
	b, ok := registry.Lookup(c.Backend)
	if !ok || c.ClientDir == "" || !c.Given["nodes"] || len(b.ClientNodes) == 0 {
		return 0
	}
	return c.Nodes
}

// Defaults fills what was left empty with the backend's defaults.
func (c *Config) Defaults() {
	if b, ok := registry.Lookup(c.Backend); ok {
		if c.Recipe == "" {
			c.Recipe = b.Recipes[0]
		}
		if c.Storage == "" {
			c.Storage = registry.DefaultStorage
		}
		if c.Cluster == "" {
			c.Cluster = b.Clusters[0]
		}
		if c.LeaseCheck == "" {
			c.LeaseCheck = registry.LeaseCheckAll
		}
		if c.ClientEndpoints == "" {
			c.ClientEndpoints = ClientEndpointsAll
		}
		if c.ServerVersion == "" || c.ServerVersion == registry.DefaultVersion {
			// What the run records: the default's name where there is a
			// choice, "default" where the backend has one build.
			c.ServerVersion = registry.DefaultVersion
			if len(b.Versions) > 0 {
				c.ServerVersion = b.Versions[0]
			}
		}
	}
	if c.PauseDuration == 0 && !c.Given["pause-duration"] {
		c.PauseDuration = 2 * c.LeaseTTL
	}
	if c.CheckMemory == 0 {
		c.CheckMemory = DefaultCheckMemory()
	}
	if !c.Given["min-exposures"] {
		c.MinExposures = DefaultMinExposures(c.Nemesis)
	}
	if c.OpTimeout == 0 {
		// Longer than any pause the nemesis injects, so a paused client's
		// op finishes for real (ok or fail) when it resumes, not as info.
		c.OpTimeout = max(10*time.Second, 2*c.PauseDuration+2*c.LeaseTTL)
	}
	if c.Name == "" {
		storage := c.Storage
		if registry.IsSharedStorage(c.Storage) && c.clientStorage() == nil {
			storage += "-" + c.Fencing
		}
		recipe := c.Recipe
		if c.LeaseCheck == registry.LeaseCheckNone {
			recipe += "-trusting"
		}
		if c.ClientDir != "" {
			// The client's name, when the manifest can be read; Validate
			// reports it when it cannot.
			recipe = "client"
			if cl, err := clientdir.Load(c.ClientDir); err == nil {
				recipe = cl.Manifest.Name
			}
		}
		c.Name = fmt.Sprintf("%s-%s-%s-%s", c.Backend, recipe, storage, strings.Join(c.Nemesis, "+"))
	}
}

// Validate checks every field up front and names the flag at fault.
func (c *Config) Validate() error {
	b, ok := registry.Lookup(c.Backend)
	if !ok {
		return usage.Errorf("backend", "unknown backend %q (accepted: %s)", c.Backend, strings.Join(registry.Names(), ", "))
	}
	if err := c.checkClient(b); err != nil {
		return err
	}
	if !slices.Contains(b.Recipes, c.Recipe) {
		return usage.Errorf("recipe", "backend %s has no recipe %q (accepted: %s)", c.Backend, c.Recipe, strings.Join(b.Recipes, ", "))
	}
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
	if !slices.Contains(b.Clusters, c.Cluster) {
		return usage.Errorf("cluster", "backend %s cannot run on cluster %q (accepted: %s)", c.Backend, c.Cluster, joinClusters(b.Clusters))
	}
	defaultVersion := c.ServerVersion == "" || c.ServerVersion == registry.DefaultVersion
	if len(b.Versions) > 0 && !defaultVersion && !slices.Contains(b.Versions, c.ServerVersion) {
		return usage.Errorf("server-version", "backend %s has no server version %q (accepted: %s, or %s for %s)", c.Backend, c.ServerVersion,
			strings.Join(b.Versions, ", "), registry.DefaultVersion, b.Versions[0])
	}
	if len(b.Versions) == 0 && !defaultVersion {
		return usage.Errorf("server-version", "backend %s has one server build (%s); drop the flag", c.Backend, cmp.Or(b.Builds[registry.DefaultVersion], registry.DefaultVersion))
	}
	if err := c.checkServerImage(b); err != nil {
		return err
	}
	if err := c.checkNodes(b); err != nil {
		return err
	}
	if err := c.checkOptions(b); err != nil {
		return err
	}
	if err := c.checkClientSide(b); err != nil {
		return err
	}
	mode, err := fenced.ParseMode(c.Fencing)
	if err != nil {
		return usage.Errorf("fencing", "%v", err)
	}
	c.mode = mode
	if err := c.checkFaults(b); err != nil {
		return err
	}
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

// checkClient: --client DIR runs a user's program as every client, so
// only what that program can talk to is accepted: a Docker cluster, and the
// fenced storage's HTTP API or a storage the program writes with its own
// fence check (registry.ClientStorage), where --fencing means nothing. The
// directory and its manifest are read here, before anything is created.
func (c *Config) checkClient(b registry.Info) error {
	if c.ClientDir == "" {
		c.client = nil
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
		// A storage this backend cannot use at all is Validate's to refuse.
		_, ok := b.ClientStorage(c.Storage)
		if !ok && (registry.IsSharedStorage(c.Storage) || slices.Contains(b.Storages, c.Storage)) {
			return usage.Errorf("storage", "with --client your program writes to the fenced storage node (%s)%s; storage %s is reached only through fencecheck's own recipes (docs/client-protocol.md)",
				registry.DefaultStorage, orOwn(b.ClientStorageNames()), c.Storage)
		}
		if ok && c.Given["fencing"] {
			return usage.Errorf("fencing", "with --client and --storage %s your program checks the token itself (its own statement or transaction), and that check is what the run tests; the storage checks nothing of its own, so --fencing has nothing to set. Drop --fencing", c.Storage)
		}
	}
	cl, err := clientdir.Load(c.ClientDir)
	if err != nil {
		return usage.Errorf("client", "%v", err)
	}
	c.client = cl
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

// clientStorage is the storage the --client program writes to with its
// own fence check, or nil (the fenced storage node, or no --client).
func (c *Config) clientStorage() *registry.ClientStorage {
	if c.ClientDir == "" {
		return nil
	}
	b, _ := registry.Lookup(c.Backend)
	cs, _ := b.ClientStorage(c.Storage)
	return cs
}

// fencingLabel says what checks tokens, for the log and the report: the
// --fencing mode, or "client" where the --client program's own check is
// the only one.
func (c *Config) fencingLabel() string {
	if c.clientStorage() != nil {
		return lockclient.FencingClient
	}
	return c.Fencing
}

// Client is the loaded --client directory, or nil.
func (c *Config) Client() *clientdir.Client { return c.client }

// Servers is how many lock servers the backend runs for this test: --nodes
// where the backend takes it, else the count it fixes itself (one for
// memory, the recipe's for Redis). --concurrency's "<k>n" and results.json's
// nodes count these. It reads the config with its defaults filled in and
// changes nothing; an unknown backend or a bad backend flag is a
// *usage.Error.
func (c Config) Servers() (int, error) {
	c.Defaults()
	b, ok := registry.Lookup(c.Backend)
	if !ok {
		return 0, usage.Errorf("backend", "unknown backend %q (accepted: %s)", c.Backend, strings.Join(registry.Names(), ", "))
	}
	if len(b.Nodes) > 0 {
		return c.Nodes, nil
	}
	if b.NewDB == nil {
		return 1, nil // runs in process only: one lock service
	}
	_, n, err := b.NewDB(c.setup(""))
	if err != nil {
		return 0, err
	}
	return n, nil
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
		return usage.Errorf("nodes", "backend %s cannot run on %d server nodes (accepted: %s)", c.Backend, c.Nodes, joinInts(b.Nodes))
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

// Client endpoints: which servers each client is given (--client-endpoints).
const (
	ClientEndpointsAll = "all"
	ClientEndpointsOne = "one"
)

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

// EndpointsOf is what process is given of the service's endpoints: all of
// them, or with ClientEndpointsOne only endpoint process mod n.
func EndpointsOf(mode string, endpoints []string, process int) []string {
	if mode != ClientEndpointsOne || len(endpoints) == 0 {
		return endpoints
	}
	return endpoints[process%len(endpoints):][:1]
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
			return usage.Errorf("nemesis", "%s cannot reach a server run from an image: the fault changes how the server's process starts, which the image's own entrypoint decides; drop --server-image or the fault", f)
		}
	}
	return nil
}
