// Package registry is where each backend describes itself: its recipes,
// storages and clusters, its server counts and versions, its own flags and
// their validation, its notes, how it makes its servers (Docker), its
// whole system in one process (if it has one) and its clients (in an
// agent). Every backend package registers itself here from an init
// function; a binary picks the backends it carries by importing them
// (backends/all imports every one).
//
// The harness asks the registry and never names a backend. The registry
// must never import a specific backend package, start anything when asked
// what a backend accepts, or know about runs, histories or verdicts.
package registry

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/docker/docker/client"

	"github.com/fencecheck/fencecheck/backends"
	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// Setup is what a backend is told about one test: the validated flags that
// concern it.
type Setup struct {
	Recipe        string
	ServerVersion string
	// Nodes is --nodes; a backend with a fixed server count ignores it.
	Nodes    int
	LeaseTTL time.Duration
	// Fencing is what the shared storage checks tokens on.
	Fencing fenced.Mode
	// Options are the values of the backend's own flags (Info.Flags), by
	// flag name; an absent one is "".
	Options map[string]string
	// ClientServers is a --client run's --nodes on a backend whose server
	// count otherwise follows its recipe (Info.ClientNodes): the servers
	// the program asked for. 0: the backend's own count.
	ClientServers int
	// Client is the --client program's name ("" when fencecheck's own
	// agents are the clients): a backend whose notes describe its own
	// recipe's settings then leaves them out, since the program picks its
	// own.
	Client string
	// TestID labels a Docker run's objects ("" when only asked for the
	// server count).
	TestID string
	// NoNetworkDelay drops an in-process system's simulated network
	// delay, so a benchmark measures the harness alone.
	NoNetworkDelay bool
	// Failpoints: the run arms failpoints in the servers, so they run
	// the backend's failpoint build with its endpoint on Failpoints.Port
	// (Info.Failpoints; only asked of a backend that has one).
	Failpoints bool
}

// Cluster is where a backend's system under test runs: the --cluster
// value.
type Cluster string

const (
	// ClusterInProcess runs the whole system in the check process: no
	// containers, servers or network.
	ClusterInProcess Cluster = "inprocess"
	// ClusterDocker runs the servers, the storage and one container per
	// client slot on a Docker engine.
	ClusterDocker Cluster = "docker"
)

// Info describes a backend: what it accepts and how it is set up.
type Info struct {
	Name string
	// Server names the lock service's server program as reports print
	// it ("etcd", "PostgreSQL"); VersionQuery says how a run asks each
	// server what it is (its DB's AskVersion), for --help and the
	// results. The answer, not the version asked for, is what a run
	// records.
	Server       string
	VersionQuery string
	Recipes      []string // the first is the default
	// Storages the backend keeps itself (etcd: the resource in etcd); the
	// shared ones (Storages, e.g. the fenced node) work with every backend.
	Storages []string
	// Clusters it runs on; the first is the default. ClusterInProcess
	// needs InProcess.
	Clusters []Cluster
	// MinTTL is the shortest lease the flag accepts (a backend may still
	// clamp it up, and says so in Notes).
	MinTTL time.Duration
	// Versions of the servers, for --server-version; the first is the
	// default (empty: the backend runs one build, the one its node image
	// carries, and the flag is refused). Nodes are the accepted --nodes (empty: the backend's
	// server count is fixed, and FixedNodes says why --nodes is refused).
	Versions []string
	// Builds says what each server build is, by Versions entry, for
	// --help and the docs ("etcd 3.6.x built from the Go module proxy");
	// a backend with one build describes it under DefaultVersion.
	Builds map[string]string
	// Releases, when set, lets --server-version name an exact release of
	// the server beside Versions (etcd 3.5.4), compiled on first use.
	Releases *Releases
	// NodesWhy says why the counts missing from Nodes are refused (one
	// server for a backend that sets its servers up as a cluster), for
	// the error; "" for none.
	NodesWhy   string
	Nodes      []int
	FixedNodes string
	// ClientNodes are the server counts a --client program may ask for
	// with --nodes where the count otherwise follows the recipe (Redis:
	// one master, or five for a Redlock client); empty: a client run gets
	// the backend's own count.
	ClientNodes []int
	// Flags are the backend's own flags, e.g. what Redis servers keep on
	// disk; each is refused with any other backend.
	Flags []usage.Flag
	// ServerImage, when set, says how the backend runs its servers from an
	// image the user names (--server-image): the official image's
	// conventions it follows (entrypoint, environment, data directory,
	// ports). "" when it cannot.
	ServerImage string
	// LocalServerImage, when set, builds a server image in the official
	// image's layout on this machine, with no registry (`check image
	// server`), for --server-image where none can be pulled.
	LocalServerImage *LocalServerImage
	// NoClockFaults says why the clock faults cannot reach this backend's
	// servers (a static binary libfaketime cannot be preloaded into,
	// leases timed on the monotonic clock); "" when they can.
	NoClockFaults string
	// DataDir is the directory in each server node (the node image's
	// servers, not --server-image's) where the lock service keeps what it
	// must not lose: the power faults mount their filesystem layer
	// (nemesis/lossyfs) over it before the servers first start, so what
	// the servers never fsynced there is lost in a power cut. It must hold
	// the servers' durable state; the layer makes it, and whatever Setup
	// puts in it must go through an exec in the node (Docker's copy API
	// writes beneath a filesystem mounted in the container) and be synced
	// (`sync FILE`): the layer never writes back on its own, and a
	// provisioned server's files are long on disk before a power cut. "" when the
	// servers keep nothing on disk: the power faults are refused.
	DataDir string
	// DataLog is a glob (path.Match) naming the files under DataDir
	// whose sync makes an acknowledged write durable — the service's log
	// — matched against a file's path under DataDir and its base name:
	// an aimed power cut (--power-at) counts their syncs. "" when the
	// backend names none (then --power-log must).
	DataLog string
	// ExpiredGrant, when set, tells from an acquire's completion (ok, or a
	// failure the built-in client made of it) whether the lock service
	// granted the lock on a lease or session that had already expired —
	// etcd's bug 11456, which Jepsen measured — so a run can count such
	// grants (results.json's expired_grants). Nil when the recipe cannot
	// tell; NoExpiredGrants then says why.
	ExpiredGrant func(recipe string, e history.Event) bool
	// NoExpiredGrants says why the backend's grants are not counted: they
	// cannot happen by construction, or the recipe cannot tell.
	NoExpiredGrants string
	// RunDirs are the directories outside backends.DataRoot and
	// backends.LogDir that the backend's servers write in their nodes at
	// run time (a socket, a lock file).
	RunDirs []string
	// ClosedToClients says why no outside lock client (--client) can
	// speak to this backend's lock service, e.g. one that lives inside
	// fencecheck; "" when a client can.
	ClosedToClients string
	// ClientStorages are the backend's own storages (of Storages) that a
	// --client program can write to itself, by name.
	ClientStorages map[string]*ClientStorage
	// OneEndpoint: a client can be bound to one of the servers
	// (--client-endpoints one), as Jepsen's clients were, because every
	// server answers for the whole service. AllEndpoints says why not
	// when it is false, and Register asks for one or the other.
	OneEndpoint  bool
	AllEndpoints string

	// CompileLast says that the backend's server build and agent program
	// take many times another backend's to compile (kube-apiserver: 8 to
	// 15 minutes on 2 cores, client-go's agent 6), so `check image build
	// --all` compiles them after every other backend's, whose tests start
	// sooner (CI runs this backend's tests last).
	CompileLast bool

	// CoreImage, when set, says that a Docker run of this setup needs
	// only the core node image (images.EnsureCoreImage: the tools and the
	// servers compiled on the host), not Debian's servers on top of it,
	// so a first run does not wait for them. Nil: the whole node image.
	CoreImage func(s Setup) bool

	// NewDB makes the servers' side for a Docker run and says how many
	// server nodes it needs. It must not start anything: validation calls
	// it to learn the server count before anything is created. An error
	// about a flag is a *usage.Error.
	NewDB func(s Setup) (db backends.DB, servers int, err error)
	// Notes, if set, are what the run's log should say about this setup
	// (e.g. a lease clamped to what the servers can grant).
	Notes func(s Setup) []string
	// InProcess makes the whole system in this process, for --cluster
	// inprocess.
	InProcess func(s Setup) InProcess
	// OpenClient makes one client in an agent (`check agent`). storage is
	// the shared storage's client, or nil when the backend keeps the
	// resource itself (spec.Storage is then one of its own storages). Nil
	// when Agent is set.
	OpenClient ClientOpener
	// Agent, when set, says that the backend's built-in clients run in a
	// program of their own, not in `check agent`: its client library is
	// too large to link into the check binary (client-go was two fifths of
	// its packages). The harness gets that program for the engine's
	// architecture and runs it in the client containers instead.
	Agent *AgentProgram

	// Durability, when set, is the backend's durability settings, safe and
	// relaxed, and the power fault that tests them (`check compare
	// --preset power`); nil when its servers keep nothing on disk or have
	// no setting to relax.
	Durability *Durability
	// Failpoints, when set, says the backend's servers have a build with
	// failpoints a run can arm (the failpoint fault); nil when none has.
	Failpoints *Failpoints
	// Deployments are the ways users deploy the lock service that
	// `check compare --preset <name>-deployments` puts side by side, each
	// with its recipes, its own flags and the faults that have meaning
	// for it; empty: the backend has one way.
	Deployments []Deployment
	// KnownBugs are published bugs of the backend's servers, each
	// reproduced by a broken and a fixed row of `check compare --preset
	// known-bugs`; empty: none.
	KnownBugs []KnownBug
}

// AgentProgram is a backend's own agent program: a main package of this
// module that serves the same agent protocol as `check agent`
// (harness/agent.Serve, the spec from the init line's builtin field or
// --spec) with the backend's client linked in, run as `<Name> agent`.
type AgentProgram struct {
	// Name is the program's file name: in the client containers (beside
	// the check binary), in the user's cache and beside a check binary
	// built by hand.
	Name string
	// Package is its main package, relative to the module's root
	// ("./cmd/check-kubernetes"): what `go build` compiles.
	Package string
	// What says what it is, for the build step and errors ("the
	// kubernetes agent, client-go's leader election").
	What string
}

// BuildCommand is the command, run in the module's root, that builds the
// program into dir ("" is bin, beside a check binary built as bin/check).
func (a AgentProgram) BuildCommand(dir string) string {
	if dir == "" {
		dir = "bin"
	}
	return fmt.Sprintf("CGO_ENABLED=0 go build -o %s %s", filepath.Join(dir, a.Name), a.Package)
}

// InProcess is a backend's whole system under test in one process: the
// lock service, the storage and one freezable slot per client, named as
// history.SlotName names them.
type InProcess interface {
	// NewClient opens a client for a process running in slot (1-based).
	NewClient(ctx context.Context, slot int) (backends.Client, error)
	// Freeze and Thaw stop and resume every client in the named slot.
	Freeze(ctx context.Context, slot string) error
	Thaw(ctx context.Context, slot string) error
	// Info describes the system for the report.
	Info() map[string]string
	// Close resumes every slot.
	Close(ctx context.Context) error
}

var infos []Info

// Register adds a backend; each backend package calls it from init.
func Register(b Info) {
	if b.Name == "" || len(b.Recipes) == 0 || len(b.Clusters) == 0 {
		panic(fmt.Sprintf("registry: backend %q needs a name, recipes and clusters", b.Name))
	}
	if _, dup := Lookup(b.Name); dup {
		panic(fmt.Sprintf("registry: backend %q registered twice", b.Name))
	}
	if slices.Contains(b.Clusters, ClusterInProcess) != (b.InProcess != nil) {
		panic(fmt.Sprintf("registry: backend %q: cluster inprocess and InProcess go together", b.Name))
	}
	if (b.OpenClient == nil) == (b.Agent == nil) {
		panic(fmt.Sprintf("registry: backend %q: say either how `check agent` opens a client (OpenClient) or which program runs them (Agent)", b.Name))
	}
	if a := b.Agent; a != nil && (a.Name == "" || !strings.HasPrefix(a.Package, "./") || a.What == "") {
		panic(fmt.Sprintf("registry: backend %q: its agent program needs a name, a ./package and a description", b.Name))
	}
	if r := b.Releases; r != nil && (r.What == "" || r.Check == nil || r.Served == nil || len(b.Versions) == 0) {
		panic(fmt.Sprintf("registry: backend %q: its exact releases need a description, a check and a question to the proxy, beside named Versions", b.Name))
	}
	if b.OneEndpoint == (b.AllEndpoints != "") {
		panic(fmt.Sprintf("registry: backend %q: say either OneEndpoint or why not (AllEndpoints)", b.Name))
	}
	infos = append(infos, b)
	sort.Slice(infos, func(i, j int) bool { return infos[i].Name < infos[j].Name })
}

// All lists the registered backends by name.
func All() []Info { return slices.Clone(infos) }

// RunDirs are every directory a run writes in the nodes, whichever
// backend or storage ran there: emptied, they leave a warm cluster as a
// new one was (engine.Cluster.Rewarm).
func RunDirs() []string {
	dirs := []string{backends.DataRoot, backends.LogDir}
	for _, b := range infos {
		for _, d := range b.RunDirs {
			if !slices.Contains(dirs, d) {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

// Lookup finds a backend by name.
func Lookup(name string) (Info, bool) {
	for _, b := range infos {
		if b.Name == name {
			return b, true
		}
	}
	return Info{}, false
}

// Names lists the registered backends' names.
func Names() []string {
	var out []string
	for _, b := range infos {
		out = append(out, b.Name)
	}
	return out
}

// RunsInProcess reports whether the backend can run on ClusterInProcess.
func (b Info) RunsInProcess() bool { return slices.Contains(b.Clusters, ClusterInProcess) }

// DefaultBackend is the backend a test uses unless told otherwise: the
// first that runs in process, so that a first run needs no Docker.
func DefaultBackend() string {
	for _, b := range infos {
		if b.RunsInProcess() {
			return b.Name
		}
	}
	return ""
}

// OpenToClients names the backends an outside lock client (--client) can
// speak to.
func OpenToClients() []string {
	var out []string
	for _, b := range infos {
		if b.ClosedToClients == "" {
			out = append(out, b.Name)
		}
	}
	return out
}

// OrList joins names for a message: "a, b, c or d".
func OrList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// DefaultVersion is the --server-version value that takes a backend's
// default build: its first Versions entry, or the one build of a backend
// with no choice. A run records which it was.
const DefaultVersion = "default"

// VersionUsage is --server-version's help: every backend's builds, the
// default first, each with what it is.
func VersionUsage() string {
	var parts []string
	for _, b := range infos {
		if len(b.Versions) == 0 {
			if what := b.Builds[DefaultVersion]; what != "" {
				parts = append(parts, b.Name+": "+what)
			}
			continue
		}
		var vs []string
		for i, v := range b.Versions {
			s := v
			if i == 0 {
				s += " (taken first)"
			}
			if what := b.Builds[v]; what != "" {
				s += ": " + what
			}
			vs = append(vs, s)
		}
		if b.Releases != nil {
			vs = append(vs, "or "+b.Releases.What)
		}
		parts = append(parts, b.Name+" "+strings.Join(vs, "; "))
	}
	return fmt.Sprintf("the servers' build; %q (or no flag) takes each backend's first — %s. What the servers say they are is recorded either way (results.json servers)",
		DefaultVersion, strings.Join(parts, " · "))
}

// NodesUsage says which --nodes counts the backends take, for the flag's
// help, from their Nodes and ClientNodes: "etcd, nats and zookeeper: 3 or
// 5; with --client, redis: 1, 3 or 5; the other backends' count is fixed".
func NodesUsage() string {
	type group struct {
		counts string
		names  []string
	}
	var own, client []group
	add := func(gs []group, counts []int, name string) []group {
		var c []string
		for _, n := range counts {
			c = append(c, fmt.Sprint(n))
		}
		key := OrList(c)
		for i := range gs {
			if gs[i].counts == key {
				gs[i].names = append(gs[i].names, name)
				return gs
			}
		}
		return append(gs, group{key, []string{name}})
	}
	for _, b := range infos {
		if len(b.Nodes) > 0 {
			own = add(own, b.Nodes, b.Name)
		}
		if len(b.ClientNodes) > 0 {
			client = add(client, b.ClientNodes, b.Name)
		}
	}
	var parts []string
	for _, g := range own {
		parts = append(parts, fmt.Sprintf("%s: %s", andList(g.names), g.counts))
	}
	for _, g := range client {
		parts = append(parts, fmt.Sprintf("with --client, %s: %s", andList(g.names), g.counts))
	}
	return strings.Join(append(parts, "the other backends' count is fixed"), "; ")
}

func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// Flag finds backend b's own flag.
func (b Info) Flag(name string) (usage.Flag, bool) { return usage.Find(b.Flags, name) }

// owners are the backends as owners of their own flags.
func owners() usage.Owners {
	o := usage.Owners{Chooser: "backend", Unowned: "no backend in this build has this flag"}
	for _, b := range infos {
		o.List = append(o.List, usage.Owner{Name: b.Name, Flags: b.Flags})
	}
	return o
}

// Flags lists every backend's own flags, sorted by name, each once.
func Flags() []usage.Flag { return owners().Flags() }

// FlagOwners names the backends that understand flag.
func FlagOwners(flag string) []string { return owners().Of(flag) }

// CheckFlags refuses a flag of options given without backend, the one
// chosen, owning it (and one no backend has), and asks backend to check
// its flags' values. options must hold no other kind of owner's flags (a
// fault's). Its error is a *usage.Error.
func CheckFlags(backend string, options map[string]string) error {
	return owners().Check([]string{backend}, options)
}

// HTTPClient is the HTTP client an agent's clients share.
func HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}
}

// ClientOpener makes one client of a backend in an agent, given its
// spec and its shared storage's client (nil when the backend keeps the
// resource itself): Info.OpenClient, or the opener of a backend whose
// clients run in a program of their own (Info.Agent).
type ClientOpener func(ctx context.Context, spec backends.ClientSpec, storage fenced.Storage) (backends.Client, error)

// OpenClient opens the client a spec describes, in the process that will
// run it: `check agent` in a client container. A backend whose built-in
// clients run in another program (Info.Agent) is refused with that
// program's name: its client library is not linked into this one.
func OpenClient(ctx context.Context, spec backends.ClientSpec) (backends.Client, error) {
	b, ok := Lookup(spec.Backend)
	if !ok {
		return nil, fmt.Errorf("no client for backend %q", spec.Backend)
	}
	if a := b.Agent; a != nil {
		return nil, fmt.Errorf("backend %s's built-in clients run in the program %s (%s), not in this one: run `%s agent` (build it with %s)",
			b.Name, a.Name, a.What, a.Name, a.BuildCommand(""))
	}
	return OpenClientWith(ctx, spec, b.OpenClient)
}

// OpenClientWith opens a client with open, the same way in every agent
// program: the shared storage the spec names is opened first and handed
// to open, and the client is then set up for the spec's lease check. A
// backend's own agent program (Info.Agent) calls it with its opener, so
// it opens storages and applies lease checks exactly as `check agent`.
func OpenClientWith(ctx context.Context, spec backends.ClientSpec, open ClientOpener) (backends.Client, error) {
	var storage fenced.Storage
	if k, ok := storages[spec.Storage]; ok {
		mode, err := fenced.ParseMode(spec.Fencing)
		if err != nil {
			return nil, err
		}
		st, err := k.Open(ctx, spec, mode)
		if err != nil {
			return nil, err
		}
		storage = st
	}
	c, err := open(ctx, spec, storage)
	if err != nil {
		return nil, err
	}
	if err := ApplyLeaseCheck(c, spec.LeaseCheck); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Lease checks: what a built-in client checks of its lease (--lease-check).
const (
	// LeaseCheckAll is the careful client: a grant whose lock is already
	// gone fails the acquisition, and every read and write first asks
	// whether the lease is still held.
	LeaseCheckAll = "all"
	// LeaseCheckNone trusts the grant, as Jepsen's etcd client did: no
	// check fails an acquisition, a read or a write.
	LeaseCheckNone = "none"
)

// LeaseChecks lists the accepted --lease-check values, the default first.
var LeaseChecks = []string{LeaseCheckAll, LeaseCheckNone}

// Trusting is a client that can be told to trust its grants. Every
// built-in client has it (each embeds a fenced.Guard, and etcd's also
// drops its read-back of the lock key).
type Trusting interface {
	TrustGrants()
}

// ApplyLeaseCheck sets client c up for lease check mode ("" is
// LeaseCheckAll).
func ApplyLeaseCheck(c backends.Client, mode string) error {
	switch mode {
	case "", LeaseCheckAll:
		return nil
	case LeaseCheckNone:
		t, ok := c.(Trusting)
		if !ok {
			return fmt.Errorf("this client (%T) cannot be told to trust its grants", c)
		}
		t.TrustGrants()
		return nil
	}
	return fmt.Errorf("unknown lease check %q (accepted: %s)", mode, strings.Join(LeaseChecks, ", "))
}

// LocalServerImage is how a backend builds its server image locally.
type LocalServerImage struct {
	// Versions are the versions it can build (empty: one, taking no
	// version argument).
	Versions []string
	// Build builds the image for version on the Docker engine and returns
	// its tag, writing progress.
	Build func(ctx context.Context, cli *client.Client, version string, progress io.Writer) (string, error)
}
