package harness

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/clientdir"
	"github.com/fencecheck/fencecheck/compose/sshnodes"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/lockclient"
	"github.com/fencecheck/fencecheck/nemesis"
)

// Test is one test resolved: the Config with its defaults filled in and
// checked, and everything derived from it, each derived once — the
// backend's registry entry, the fencing mode, the loaded --client program
// and the storage it writes with its own fence check, what the faults are
// told, the server count, the test's name. The phases of a run read it
// and derive nothing again, so a run asks the backend registry about its
// backend once and reads the --client directory once. A Test is a value:
// nothing changes it once Resolve returns it (Rerun makes another).
type Test struct {
	cfg Config
	// info is the backend's registry entry; known says the backend
	// exists (validation refuses it otherwise).
	info  registry.Info
	known bool
	// mode is cfg.Fencing parsed.
	mode fenced.Mode
	// client is cfg.ClientDir loaded (nil without --client); clientErr
	// is why it could not be, which validation reports where it always
	// has (checkClient).
	client    *clientdir.Client
	clientErr error
	// own is the storage the --client program writes with its own fence
	// check, or nil (the fenced storage node, or no --client).
	own *registry.ClientStorage
	// kinds is --nemesis resolved (checkFaults): the faults' registry
	// entries, looked up once, as info is the backend's.
	kinds nemesis.Kinds
	// faults is what the run's faults are told (nemesis.Settings): on a
	// Docker cluster with its server count, or in process.
	faults nemesis.Settings
	// servers is how many lock servers the backend runs (Servers).
	servers int
	// inv is --hosts read and cut to the hosts the run uses (checkHosts),
	// nil without it.
	inv *sshnodes.Inventory
	// outputs are where the run reports beyond its store (WithOutputs).
	outputs Outputs
	// outputsChecked: checkOutputs passed for cfg's store, name and
	// --junit (Resolve, Rerun); RunTest checks them when not.
	outputsChecked bool
}

// Resolve fills cfg's defaults, checks every field up front (the places
// the run writes too) and derives what the run needs, once. Bad input is
// a *usage.Error naming the flag, returned before anything is created.
func Resolve(cfg Config) (*Test, error) {
	t, err := resolve(cfg, nil)
	if err != nil {
		return nil, err
	}
	if err := checkOutputs(&t.cfg); err != nil {
		return nil, err
	}
	t.outputsChecked = true
	return t, nil
}

// ResolveCell is Resolve for a cell of a comparison, resolved once before
// its runs: its store is not chosen yet, so the outputs are left to Rerun
// (which each run goes through), and client, when not nil, is
// cfg.ClientDir already loaded by the caller (the comparison labels its
// rows with the program's name), so it is not read again.
func ResolveCell(cfg Config, client *clientdir.Client) (*Test, error) {
	return resolve(cfg, client)
}

// Rerun is the same test run again with another seed into another store
// (a comparison's runs of one cell, --test-count): neither changes
// anything Resolve derived, so only the outputs are checked again.
func (t *Test) Rerun(seed int64, store string) (*Test, error) {
	again := *t
	again.cfg.Seed, again.cfg.Store = seed, store
	if err := checkOutputs(&again.cfg); err != nil {
		return nil, err
	}
	again.outputsChecked = true
	return &again, nil
}

// resolve is Resolve without the outputs: what ClientTest and SetUpBare
// need, which never write the store.
func resolve(cfg Config, client *clientdir.Client) (*Test, error) {
	t := newTest(cfg, client)
	t.cfg.defaults(t.info, t.known, t.client)
	t.own = t.cfg.ownStorage(t.info)
	if err := t.validate(); err != nil {
		return nil, err
	}
	if err := t.checkReleaseServed(); err != nil {
		return nil, err
	}
	t.servers = t.countServers()
	return t, nil
}

// lookUp is the one place the harness finds a backend by its name: a
// Test of cfg with the backend's registry entry and nothing else derived.
// newTest (every run), Config.Servers and CheckFaults (questions asked
// before a test is resolved) all start here.
func lookUp(cfg Config) *Test {
	t := &Test{cfg: cfg}
	t.info, t.known = registry.Lookup(cfg.Backend)
	return t
}

// newTest looks the backend up and reads the --client directory: the
// two things every later step asks, asked here once.
func newTest(cfg Config, client *clientdir.Client) *Test {
	t := lookUp(cfg)
	t.client = client
	if cfg.ClientDir != "" && client == nil {
		t.client, t.clientErr = clientdir.Load(cfg.ClientDir)
	}
	if cfg.ClientDir == "" {
		t.client = nil
	}
	return t
}

// Config is the test as resolved: the Config it was made from with its
// defaults filled in. It is a copy, its lists and maps too, so changing
// it changes nothing of t.
func (t *Test) Config() Config {
	c := t.cfg
	c.Nemesis, c.Endpoints = slices.Clone(c.Nemesis), slices.Clone(c.Endpoints)
	c.Options, c.Given = maps.Clone(c.Options), maps.Clone(c.Given)
	return c
}

// Name is the test's name in the store: --name, or derived from the
// backend, recipe (or client), storage and faults.
func (t *Test) Name() string { return t.cfg.Name }

// Client is the loaded --client directory, or nil.
func (t *Test) Client() *clientdir.Client { return t.client }

// Servers is how many lock servers the backend runs for this test: --nodes
// where the backend takes it, else the count it fixes itself (one for
// memory, the recipe's for Redis). --concurrency's "<k>n" and results.json's
// nodes count these.
func (t *Test) Servers() int { return t.servers }

// countServers works Servers out: the count the fault check asked the
// backend for on a Docker cluster, else the backend's answer now; --nodes
// should the backend not say (as the report always had it).
func (t *Test) countServers() int {
	if n := len(t.cfg.Endpoints); n > 0 {
		return n
	}
	if len(t.info.Nodes) == 0 && t.info.NewDB != nil && t.faults.Docker {
		return t.faults.Servers
	}
	n, err := t.serverCount()
	if err != nil {
		return t.cfg.Nodes
	}
	return n
}

// serverCount is Servers asked of the backend.
func (t *Test) serverCount() (int, error) {
	switch {
	case len(t.info.Nodes) > 0:
		return t.cfg.Nodes, nil
	case t.info.NewDB == nil:
		return 1, nil // runs in process only: one lock service
	}
	_, n, err := t.info.NewDB(t.setup(""))
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Servers is Test.Servers asked of a config before it is resolved (the
// CLI needs it to read --concurrency's "<k>n" before the client count is
// known): it fills the defaults of a copy and changes nothing; an unknown
// backend or a bad backend flag is a *usage.Error.
func (c Config) Servers() (int, error) {
	t := lookUp(c)
	t.cfg.defaults(t.info, t.known, nil)
	if !t.known {
		return 0, unknownBackend(c.Backend)
	}
	return t.serverCount()
}

// setup is what the backend is told about this test.
func (t *Test) setup(testID string) registry.Setup {
	c := &t.cfg
	return registry.Setup{Recipe: c.Recipe, ServerVersion: c.ServerVersion, Nodes: c.Nodes, LeaseTTL: c.LeaseTTL,
		Fencing: t.mode, Options: c.Options, TestID: testID, NoNetworkDelay: c.NoNetworkDelay, ClientServers: t.clientServers(), Client: t.clientName(),
		Failpoints: t.kinds.NeedsFailpoints()}
}

// clientName is the --client program's name, "" without one.
func (t *Test) clientName() string {
	if t.client == nil {
		return ""
	}
	return t.client.Manifest.Name
}

// clientServers is the server count a --client run asked for with
// --nodes on a backend that lets it (registry.Info.ClientNodes), else 0.
func (t *Test) clientServers() int {
	c := &t.cfg
	if !t.known || c.ClientDir == "" || !c.Given["nodes"] || len(t.info.ClientNodes) == 0 {
		return 0
	}
	return c.Nodes
}

// fencingLabel says what checks tokens, for the log and the report: the
// --fencing mode, or "client" where the --client program's own check is
// the only one.
func (t *Test) fencingLabel() string {
	if t.own != nil {
		return lockclient.FencingClient
	}
	return t.cfg.Fencing
}

// faultSettings is what the faults are told about this test: on a Docker
// cluster with this many server nodes, or in process.
func (t *Test) faultSettings(docker bool, servers int) nemesis.Settings {
	c := &t.cfg
	s := nemesis.Settings{Backend: c.Backend, NoClockFaults: t.info.NoClockFaults, DataDir: t.info.DataDir, DataLog: t.info.DataLog, Docker: docker, Servers: servers, Clients: c.Clients, Keys: c.Keys,
		LeaseTTL: c.LeaseTTL, PauseDuration: c.PauseDuration, Interval: c.NemesisInterval, Options: c.Options}
	if docker && t.kinds.NeedsFailpoints() {
		t.describeFailpoints(&s)
	}
	return s
}

// unknownBackend refuses a --backend the registry does not have.
func unknownBackend(name string) error {
	return usage.Errorf("backend", "%s", unknownBackendText(name))
}

// unknownBackendText says that name is no backend, and which are.
func unknownBackendText(name string) string {
	return fmt.Sprintf("unknown backend %q (accepted: %s)", name, strings.Join(registry.Names(), ", "))
}
