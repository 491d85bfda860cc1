package compare

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/nemesis"
)

// Presets are the accepted --preset values.
var Presets = []string{"quick", "full", "jepsen-etcd", "kleppmann", "power", KnownBugs, RedisDeployments}

// RedisDeployments is the preset that puts Redis's deployments side by
// side. A deployments preset is named after its backend
// (<backend>-deployments) and takes everything else from the backend's own
// description of its deployments (registry.Info.Deployments).
const RedisDeployments = "redis-deployments"

// KnownBugs is the preset that reproduces the lock services' published
// bugs: each backend's own list (registry.Info.KnownBugs), one row on the
// release that had the bug and one on the release that fixed it.
const KnownBugs = "known-bugs"

// deploymentsSuffix ends a deployments preset's name.
const deploymentsSuffix = "-deployments"

// Where the rows of the power and deployments presets come from: each
// backend's description of its durability settings, or of its
// deployments.
const (
	fromDurability  = "durability"
	fromDeployments = "deployments"
	fromKnownBugs   = "known-bugs"
)

// keepsExposuresDefault are the presets whose runs keep their faults'
// --min-exposures: under a power cut the question is whether the
// acknowledged grant and token survive it, which the check answers
// directly (a token granted twice or going down is a violation), not
// whether a superseded holder sent a late op, so a valid run with no
// exposure still answers it (its cell says "not exercised" all the same).
//
// The known-bugs preset's faults crash servers or freeze them all; its
// question is whether a grant survives the crash, which its runs answer
// with a grant after each crash (Config.GrantAfterEachCrash).
var keepsExposuresDefault = map[string]bool{"power": true, KnownBugs: true}

// published are the figures presets reproduce, as their sources give them.
var published = map[string]string{
	"jepsen-etcd": "Jepsen's analysis of etcd 3.4.3 (January 2020) reports about 18 % of acknowledged updates lost " +
		"by a client that trusts its grant, unfenced: read it beside the row \"lock-rpc (trusting: lease-check none) · fenced · none\" " +
		"(docs/jepsen-etcd.md explains the difference from the histories)",
}

// jepsenEtcdBase is what the jepsen-etcd preset changes in every run: the
// setup of the lock test in Jepsen's analysis of etcd 3.4.3 (2 s leases, 5
// processes, 5 nodes, a 0–2 s critical section, half the ops lock-free
// reads, a server paused for 5 s every 5 s), on Debian's etcd 3.4
// (docs/jepsen-etcd.md).
func jepsenEtcdBase(base *harness.Config) {
	base.Nodes, base.Clients, base.LeaseTTL = 5, 5, 2*time.Second
	base.Dwell = 2 * time.Second
	base.ClientEndpoints = harness.ClientEndpointsOne
	base.PauseDuration, base.NemesisInterval = 5*time.Second, 5*time.Second
	base.ServerVersion = "3.4"
	// Jepsen's lock-set generator is gen/mix of adds and reads: half of
	// the ops read the set without the lock.
	base.ReadMix = JepsenEtcdReadMix
	// Its client waits 5 s for any etcd call, the Lock call included, and
	// fails the add when the lock does not come in time.
	base.AcquireTimeout = JepsenEtcdAcquireTimeout
}

// JepsenEtcdAcquireTimeout is the jepsen-etcd preset's --acquire-timeout:
// the client in its container gets 5 s of it — the timeout of every etcd
// call of Jepsen's etcd client, its Lock call included — since the agent
// gives up 0.5 s before the harness does (agent.Remote).
const JepsenEtcdAcquireTimeout = 5500 * time.Millisecond

// JepsenEtcdReadMix is the jepsen-etcd preset's --read-mix: Jepsen's
// gen/mix draws an add or a lock-free read with equal chance.
const JepsenEtcdReadMix = 0.5

// kleppmannBase is what the kleppmann preset changes in every run: a
// critical section of a second, so that a clock jump lands inside a hold,
// and clock-jump moving a majority of the servers, the simpler form of
// Kleppmann's case against Redlock (docs/kleppmann-redlock.md).
func kleppmannBase(base *harness.Config) {
	base.Work = time.Second
	base.Options = map[string]string{"clock-targets": nemesis.TargetsMajority}
}

// PowerNemesisInterval is the power preset's --nemesis-interval: the rest
// between a server's restart and the next cut. A run can ask what a cut
// left behind only once the service serves again. At the root command's
// 2 s, etcd with its default settings, cut whole every 6 s, granted once
// after 3 cuts in a 20 s run (27 times after 2 cuts at 5 s); at 5 s a
// JetStream cluster granted nothing after its first cut even with
// sync_interval always, where at 10 s it granted again after every cut
// (docs/power-loss.md). 10 s is at the edge for JetStream on a loaded
// machine: NATS 2.12.1 elected its stream's leader 8.2 to 13.9 s after a
// power-loss-all restart with two runs at a time (docs/known-bugs.md,
// NATS 7564), so a cut healed 11 s before the next can go without a
// grant after it.
const PowerNemesisInterval = 10 * time.Second

// expandBase is the configuration every run of the matrix starts from:
// the defaults (the preset's, for jepsen-etcd), the spec's values over
// them.
func expandBase(spec Spec) harness.Config {
	base := DefaultBase()
	fullTime := spec.FullTime
	if spec.Preset == "jepsen-etcd" {
		jepsenEtcdBase(&base)
		// The damage is measured over the whole run, as Jepsen's is.
		fullTime = true
	}
	if spec.Preset == "kleppmann" {
		kleppmannBase(&base)
	}
	if spec.Preset == "power" {
		base.NemesisInterval = PowerNemesisInterval
	}
	if spec.Preset == KnownBugs {
		// A fixed release's VALID counts only if the lock was granted
		// again after every crash (issue 55; models.Crashes).
		base.GrantAfterEachCrash = true
	}
	b := spec.Base
	base.Clients = cmp.Or(b.Clients, base.Clients)
	base.Keys = cmp.Or(b.Keys, base.Keys)
	base.LeaseTTL = cmp.Or(b.LeaseTTL, base.LeaseTTL)
	base.Work = cmp.Or(b.Work, base.Work)
	base.Dwell = cmp.Or(b.Dwell, base.Dwell)
	base.PauseDuration = cmp.Or(b.PauseDuration, base.PauseDuration)
	base.ServerVersion = cmp.Or(b.ServerVersion, base.ServerVersion)
	base.NemesisInterval = cmp.Or(b.NemesisInterval, base.NemesisInterval)
	base.AcquireTimeout = cmp.Or(b.AcquireTimeout, base.AcquireTimeout)
	base.CheckTimeout = cmp.Or(b.CheckTimeout, base.CheckTimeout)
	base.CheckMemory = cmp.Or(b.CheckMemory, base.CheckMemory)
	base.StopOnViolation = !fullTime
	base.Nodes = cmp.Or(b.Nodes, base.Nodes)
	base.AgentBinary = b.AgentBinary
	base.FreshCluster = b.FreshCluster
	base.VerboseBuild = b.VerboseBuild
	base.ClientEndpoints = cmp.Or(b.ClientEndpoints, base.ClientEndpoints)
	// A preset's runs are evidence: in one, a run that put safety at stake
	// nowhere is unknown whatever its column's fault, not a valid cell
	// (docs/results.md). Outside presets each column has its fault's
	// default; --min-exposures overrides both.
	if (spec.Preset != "" && !keepsExposuresDefault[spec.Preset]) || b.Given["min-exposures"] {
		base.MinExposures = 1
		if b.Given["min-exposures"] {
			base.MinExposures = b.MinExposures
		}
		base.Given = maps.Clone(b.Given)
		if base.Given == nil {
			base.Given = map[string]bool{}
		}
		base.Given["min-exposures"] = true
	}
	if spec.ReadMix != nil {
		base.ReadMix = *spec.ReadMix
	}
	return base
}

// lists are the matrix's axes and counts: the preset's, then the flags
// over them.
type lists struct {
	everyRecipe                         bool
	backends, storages, faults, fencing []string
	runs                                int
	timeLimit                           time.Duration
	leaseChecks                         []string
	serverVersions                      []string
	// keep, when set, drops rows a preset does not need.
	keep func(Row) bool
	// rowsFrom is where the rows come from: "" (the backends' recipes),
	// fromDurability (the power preset) or fromDeployments.
	rowsFrom string
	// faultsGiven: --faults named the columns, and every row runs every
	// one (a row's own faults are the preset's choice).
	faultsGiven bool
}

// presetLists is the preset's lists with the spec's over them.
func presetLists(spec Spec) (lists, error) {
	l := lists{everyRecipe: true, storages: []string{"fenced"}, faults: []string{"pause-holder"},
		fencing: []string{"none", "all"}, runs: 1, timeLimit: 20 * time.Second, backends: spec.Backends,
		leaseChecks: []string{registry.LeaseCheckAll}}
	switch spec.Preset {
	case "":
	case "quick":
		l.everyRecipe = false
		l.timeLimit = 15 * time.Second
	case "full":
		l.storages = []string{"fenced"}
		for _, be := range registry.All() {
			l.storages = append(l.storages, be.Storages...)
		}
		for _, st := range registry.SharedStorages() {
			if st != registry.DefaultStorage {
				l.storages = append(l.storages, st)
			}
		}
		l.fencing = []string{"none", "writes", "all"}
		l.faults = []string{"pause-holder", "pause", "partition", "kill"}
		l.runs = 3
	case "jepsen-etcd":
		if len(l.backends) == 0 {
			l.backends = []string{"etcd:lock-rpc"}
		}
		l.storages = []string{"fenced", "etcd"}
		l.faults = []string{"pause-leader+pause-all"}
		l.runs = 10
		// The time limit of the suite's example (--time-limit 120).
		l.timeLimit = 120 * time.Second
		// The trusting client in every cell; the careful one beside it
		// where the storage checks nothing, to show what its checks buy.
		l.leaseChecks = []string{registry.LeaseCheckNone, registry.LeaseCheckAll}
		if len(spec.LeaseChecks) == 0 {
			l.keep = func(r Row) bool {
				return r.Client != "" || r.LeaseCheck == registry.LeaseCheckNone || (r.Storage == registry.DefaultStorage && r.Fencing == string(fenced.None))
			}
		}
	case "kleppmann":
		if len(l.backends) == 0 {
			l.backends = []string{"redis:redlock", "redis:setnx", "postgres:lease", "etcd", "zookeeper"}
		}
		l.everyRecipe = false
		l.faults = []string{"clock-jump", "clock-jump-quorum", "clock-strobe", "pause-holder"}
	case "power":
		// Each backend's safe and relaxed durability settings under the
		// power fault that suits its servers, fenced: whether the token
		// survives the cut (a fenced store refuses a token going down; a
		// token granted twice passes any fence, and the check sees it).
		l.rowsFrom = fromDurability
		if len(l.backends) == 0 {
			l.backends = durableBackends()
		}
		l.fencing = []string{"all"}
		l.runs = 3
		l.timeLimit = 30 * time.Second
	case KnownBugs:
		// Each backend's published bugs, the broken release beside the
		// fixed one, each under its own fault, 3 seeds each.
		l.rowsFrom = fromKnownBugs
		if len(l.backends) == 0 {
			l.backends = knownBugBackends()
		}
		l.fencing = []string{"all"}
		l.runs = 3
	default:
		backend, ok := strings.CutSuffix(spec.Preset, deploymentsSuffix)
		be, known := registry.Lookup(backend)
		if !ok || !known || len(be.Deployments) == 0 || !slices.Contains(Presets, spec.Preset) {
			return l, usage.Errorf("preset", "unknown preset %q (accepted: %s)", spec.Preset, strings.Join(Presets, ", "))
		}
		// The backend's deployments side by side, each under the faults
		// that have meaning for it, fenced: a recipe without a token has
		// nothing for the fence to check, so its rows read as unfenced.
		l.rowsFrom = fromDeployments
		if len(l.backends) == 0 {
			l.backends = []string{backend}
		}
		l.fencing = []string{"all"}
		l.runs = 3
	}
	if len(l.backends) == 0 {
		l.backends = DefaultBackends()
	}
	if l.rowsFrom != "" {
		l.faults = l.ownFaults()
	}
	if len(spec.Storages) > 0 {
		l.storages = spec.Storages
	}
	if len(spec.Faults) > 0 {
		l.faults, l.faultsGiven = spec.Faults, true
	}
	if len(spec.Fencing) > 0 {
		l.fencing = spec.Fencing
	}
	if len(spec.LeaseChecks) > 0 {
		l.leaseChecks = spec.LeaseChecks
	}
	l.serverVersions = spec.ServerVersions
	if spec.Runs != 0 {
		l.runs = spec.Runs
	}
	if spec.TimeLimit != 0 {
		l.timeLimit = spec.TimeLimit
	}
	return l, nil
}

// ownFaults are the columns of the power and deployments presets: every
// fault a listed backend's settings run under, each once, in the order
// the backends name them.
func (l lists) ownFaults() []string {
	var out []string
	add := func(fs ...string) {
		for _, f := range fs {
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	for _, sel := range l.backends {
		name, recipe, one := strings.Cut(sel, ":")
		be, ok := registry.Lookup(name)
		if !ok {
			continue // builtinRows names it
		}
		switch {
		case l.rowsFrom == fromDurability && be.Durability != nil:
			add(be.Durability.Fault)
		case l.rowsFrom == fromKnownBugs:
			for _, b := range be.KnownBugs {
				add(b.Fault)
			}
		case l.rowsFrom == fromDeployments:
			for _, d := range be.Deployments {
				if !one || slices.Contains(d.Recipes, recipe) {
					add(d.Faults...) // only the deployments that have rows
				}
			}
		}
	}
	return out
}
