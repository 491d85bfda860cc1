// Package harness runs a test: it sets up the system under test, drives
// the clients through the workload while the nemesis injects faults,
// records every operation, heals, takes the final reads and hands the
// history to the checker and the reports. Config is what the user asked;
// Resolve (test.go) turns it into a Test — the defaults filled in, every
// field checked, and what the phases need derived once (the backend's
// registry entry, the fencing mode, the loaded --client program, what the
// faults are told, the server count, the name) — so a run asks the
// registry about its backend once and reads a --client directory once.
// Run is Resolve and RunTest; RunTest makes a run value (run.go) that
// holds the Test and what the run learns on the way, and steps through
// the phases as its methods: set up (through systemSetup: open in
// system.go, openDocker in dockersetup.go), the workload with the
// nemesis, the heal and the final reads (workloadPhases and drive in
// phases.go, the clients in workload.go), the servers' versions
// (askServers in versions.go), tear down, check and report. It owns time,
// phases and the recorder; it never judges a history itself, and never
// names a backend or a fault: what a backend accepts and how it is set
// up, it asks backends/registry; which faults exist, what they need and
// how they are built, it asks nemesis's registry.
package harness

import (
	"fmt"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/clientdir"
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
	// given, Resolve sets it: 1 under a fault aimed at a holder
	// (nemesis.AimedAtHolders), else 0.
	MinExposures int
	// Exposures, when above 0, ends the workload once that many exposures
	// were seen (or at TimeLimit, whichever comes first): a user asks for
	// "100 frozen holders" instead of guessing a duration.
	Exposures int
	// GrantAfterEachCrash holds a valid run to a grant after every crash
	// (kill, failpoint, power cut), not after one of them
	// (models.Crashes): a run whose service granted nothing after one of
	// its crashes is unknown. `check compare --preset known-bugs` asks it
	// of every run, so that a fixed release's VALID shows it granted
	// again after each crash.
	GrantAfterEachCrash bool

	// Options are the backends' and the faults' own flags by name
	// (registry.Info.Flags, e.g. redis-persistence: what the Redis servers
	// keep on disk; nemesis.Kind.Flags); a flag left out is absent or "".
	Options map[string]string
	// KeepCluster leaves the Docker cluster up after the run (healed), for
	// a look inside; `check cluster down` removes it.
	KeepCluster bool
	// Endpoints, when set, are the user's own lock servers, already
	// running and reached only by these addresses (--endpoints): no
	// server is started, and only the faults that need no access to the
	// servers are accepted (endpoints.go). EndpointsNetwork is an existing
	// Docker network the client containers also join to reach them.
	Endpoints        []string
	EndpointsNetwork string
	// Hosts, when set, is the inventory file of the user's own hosts
	// (--hosts, compose/sshnodes): the servers, the storage and the
	// clients run there over SSH, installed by fencecheck, instead of
	// in containers (hosts.go).
	Hosts string
	// ServerImage runs the lock service's servers from this image (the
	// user's, following the official image's conventions; see
	// registry.Info.ServerImage), in place of the node image's build.
	ServerImage string
	// PowerLayer lays the power faults' filesystem layer (nemesis/lossyfs)
	// over the backend's data directory with no power fault in the run:
	// the servers run on it, nothing is ever dropped. What the layer costs
	// a workload is measured this way (bench/run --only power-layer); a
	// power fault lays it anyway.
	PowerLayer bool
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
	// agent. Resolve loads it.
	ClientDir string
	// AgentBinary is the static check binary copied into the containers
	// (default: FENCECHECK_BINARY, else this executable).
	AgentBinary string
	// Given names the flags the command line set explicitly. A flag that
	// means nothing for this test (--nodes on a backend whose server
	// count is fixed, --pause-duration without faults) is refused only
	// when given, so the defaults never fail.
	Given map[string]bool
}

// defaults fills what was left empty with the defaults of backend b
// (known: the registry has it; an unknown one fills only what needs no
// backend, and validation refuses it). client is ClientDir loaded, or
// nil when it could not be (the name then says "client"; validation
// reports why).
func (c *Config) defaults(b registry.Info, known bool, client *clientdir.Client) {
	if known {
		c.backendDefaults(b)
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
		c.Name = c.derivedName(b, client)
	}
}

// backendDefaults fills what backend b decides when it is left empty.
func (c *Config) backendDefaults(b registry.Info) {
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

// derivedName is the test's name when --name is not given: backend,
// recipe (or the --client program's name), storage (with the fencing on a
// shared storage that fences) and faults.
func (c *Config) derivedName(b registry.Info, client *clientdir.Client) string {
	storage := c.Storage
	if registry.IsSharedStorage(c.Storage) && c.ownStorage(b) == nil {
		storage += "-" + c.Fencing
	}
	recipe := c.Recipe
	if c.LeaseCheck == registry.LeaseCheckNone {
		recipe += "-trusting"
	}
	if c.ClientDir != "" {
		// The client's name, when the manifest can be read; validation
		// reports it when it cannot.
		recipe = "client"
		if client != nil {
			recipe = client.Manifest.Name
		}
	}
	return fmt.Sprintf("%s-%s-%s-%s", c.Backend, recipe, storage, strings.Join(c.Nemesis, "+"))
}

// ownStorage is the storage the --client program writes to with its own
// fence check on backend b, or nil (the fenced storage node, or no
// --client).
func (c *Config) ownStorage(b registry.Info) *registry.ClientStorage {
	if c.ClientDir == "" {
		return nil
	}
	cs, _ := b.ClientStorage(c.Storage)
	return cs
}

// Client endpoints: which servers each client is given (--client-endpoints).
const (
	ClientEndpointsAll = "all"
	ClientEndpointsOne = "one"
)

// EndpointsOf is what process is given of the service's endpoints: all of
// them, or with ClientEndpointsOne only endpoint process mod n.
func EndpointsOf(mode string, endpoints []string, process int) []string {
	if mode != ClientEndpointsOne || len(endpoints) == 0 {
		return endpoints
	}
	return endpoints[process%len(endpoints):][:1]
}
