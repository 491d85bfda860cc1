package nemesis

// The fault registry. Each fault describes itself here, from an init
// function in its own file (pause.go, pauseall.go, partition.go, kill.go,
// latency.go, clock.go, power.go): its --nemesis word, a line for --help, what it
// needs of the cluster, how long it lasts, its own flags, and how it is
// built from an Env. The
// harness asks the registry — to validate --nemesis before anything is
// created, to build the faults, to know how long each lasts — and never
// names a fault.
//
// Adding a fault is one new file in this package plus its tests: a type
// implementing Fault and a Register call. What a fault needs that no fault
// needed before comes through the generic parts, never a new field in the
// harness:
//
//   - its own flags (Kind.Flags): the CLI offers every registered fault's
//     flags, the harness refuses one given without a fault that owns it,
//     checks it with usage.Flag.Check before anything starts, and hands the
//     values to Build in Env.Settings.Options;
//   - a step on the Docker cluster after its containers exist and before
//     the lock service's servers start (Kind.Prepare), for a fault that
//     must be in place when every server starts, the first time and again
//     after a kill;
//   - the run's settings every fault may read (Settings).
//
// clock.go is such a fault: its flags (--clock-offset, --clock-targets),
// a Prepare step that has the cluster start every server under
// libfaketime, and Faults that rewrite a node's offset file; the harness,
// the CLI and --help pick it up as they are.
//
// The registry never imports the harness or a backend, and never starts
// anything when asked what a fault accepts.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/fencecheck/fencecheck/compose/nodes"
	"github.com/fencecheck/fencecheck/history"
	"github.com/fencecheck/fencecheck/internal/usage"
)

// None is the --nemesis word for a run without faults.
const None = "none"

// Kind describes one fault: its word, what it needs and how it is built.
type Kind struct {
	// Name is the --nemesis word and the Fault's Name.
	Name string
	// Summary is one line for --help.
	Summary string
	// Needs is what the fault needs of the cluster.
	Needs Needs
	// AimsAtHolder: the fault waits for a lease holder and strikes it at
	// the moment that makes it outlive its lease, so a run under it that
	// put safety at stake nowhere missed its point, and by default is not
	// a pass (--min-exposures; see AimedAtHolders).
	AimsAtHolder bool
	// Contended, when set, says why runs under this fault go at most one
	// an engine core when several run side by side (--parallel): its
	// verdicts moved when other runs shared the CPU (docs/benchmarks.md,
	// "Runs side by side"), because what the fault puts at stake is a
	// timing that a starved process shifts as much as the fault does.
	Contended string
	// Duration is how long each injection stays applied, from the run's
	// settings: DurationOfPause or DurationOfInterval (the default when
	// nil).
	Duration func(Settings) time.Duration
	// Flags are the fault's own flags, refused unless the fault is
	// chosen.
	Flags []usage.Flag
	// Check, when set, refuses settings the fault cannot work with beyond
	// what Needs says (e.g. a partition shape that cuts nothing among
	// this many servers). Its error says why, and what works instead.
	Check func(Settings) error
	// Prepare, when set, runs on a Docker cluster once its containers
	// exist and before the lock service's servers start. Env has the
	// cluster, its servers, the storage node and the settings then, but
	// no recorder: Observe is nil.
	Prepare func(ctx context.Context, env *Env) error
	// Build makes the fault for one run. An error that means the fault
	// cannot be injected here is an *Unavailable.
	Build func(ctx context.Context, env *Env) (Fault, error)
}

// Needs is what a fault needs of the cluster.
type Needs struct {
	// Docker: the fault acts on containers, servers or the network, which
	// an in-process run does not have.
	Docker bool
	// Servers is the least number of lock-service server nodes it needs.
	Servers int
	// Leader: the fault asks the lock service which node leads (the
	// backend's Primary).
	Leader bool
	// CutsClient: the fault freezes or isolates client processes, so their
	// ops in flight may end unknown.
	CutsClient bool
	// Failpoints: the fault arms failpoints in the servers' code, so the
	// servers must run their backend's failpoint build
	// (Settings.Failpoints).
	Failpoints bool
}

// Settings are what a fault is told about the run: the validated flags that
// concern faults and the shape of the cluster.
type Settings struct {
	Backend string
	// NoClockFaults says why the clock faults cannot reach the backend's
	// servers ("" when they can): the backend describes it, nemesis only
	// refuses.
	NoClockFaults string
	// DataDir is the directory in each server node where the backend's
	// servers keep what they must not lose (registry.Info.DataDir), ""
	// when they keep nothing on disk there: the power faults lay their
	// filesystem layer over it.
	DataDir string
	// DataLog is a glob naming the service's log files in DataDir, whose
	// syncs an aimed power cut counts (registry.Info.DataLog).
	DataLog string
	// Docker: the run is on a Docker cluster (else in process).
	Docker bool
	// Servers is the number of lock-service server nodes (0 in process).
	Servers int
	Clients int
	// Keys is the number of keys (--keys).
	Keys          int
	LeaseTTL      time.Duration
	PauseDuration time.Duration
	// Interval is the rest between a heal and the next fault.
	Interval time.Duration
	// Options are the faults' own flags (Kind.Flags) by name; an absent
	// one is "".
	Options map[string]string
	// Failpoints are the failpoints the servers' failpoint build has,
	// by name, when a fault needs them (Needs.Failpoints) and the
	// backend's build has them; NoFailpoints says why not otherwise.
	// FailpointPort is where each server serves their endpoint in its
	// node.
	Failpoints    []string
	NoFailpoints  string
	FailpointPort int
}

// DurationOfPause keeps a fault applied for the pause duration (by default twice the
// lease, so that a lease held by what was paused expires).
func DurationOfPause(s Settings) time.Duration { return s.PauseDuration }

// DurationOfInterval keeps a fault applied for the nemesis interval but never shorter than
// a pause, so that a partition or a kill also outlasts a lease.
func DurationOfInterval(s Settings) time.Duration { return max(s.Interval, s.PauseDuration) }

// DB is what the faults need of the lock service's servers (a backends.DB
// has it).
type DB interface {
	Servers
	// Primary is the node that leads now ("" when the service has none).
	Primary(ctx context.Context, c nodes.Nodes) (string, error)
}

// Env is what a fault is built from: the run's settings and handles on the
// system under test. The Docker fields are empty in process.
type Env struct {
	Settings Settings
	// Freezer pauses client slots c1..cN and, in Docker, nodes.
	Freezer Freezer
	// Claims stops a client process at its next failpoint for a fault.
	Claims *Claims
	// Observe adds an observer of every recorded event (a history
	// observer must never block).
	Observe func(func(history.Event))

	// Cluster is the test's nodes, a Docker cluster today (nil in
	// process).
	Cluster nodes.Nodes
	// ServerNodes are the lock service's nodes (n1..nN).
	ServerNodes []string
	// Storage is the storage node's name.
	Storage string
	// DB is the lock service's servers.
	DB DB
	// Log writes a line to the run's log (check.log); may be nil.
	Log func(format string, args ...any)

	holders *Holders
}

func (e *Env) logf(format string, args ...any) {
	if e.Log != nil {
		e.Log(format, args...)
	}
}

// Slots lists the client slots c1..cN.
func (e *Env) Slots(context.Context) ([]string, error) {
	var ts []string
	for i := 1; i <= e.Settings.Clients; i++ {
		ts = append(ts, history.SlotName(i))
	}
	return ts, nil
}

// SlotOf names the slot that runs a client process.
func (e *Env) SlotOf(process int) string { return history.SlotOf(process, e.Settings.Clients) }

// Holders follows the history for the client slot holding a lease now;
// every fault of a run shares one.
func (e *Env) Holders() *Holders {
	if e.holders == nil {
		e.holders = &Holders{SlotOf: e.SlotOf}
		e.Observe(e.holders.Observe)
	}
	return e.holders
}

// AllServers lists every server node.
func (e *Env) AllServers(context.Context) ([]string, error) { return e.ServerNodes, nil }

// Leader lists the node that leads now, or nothing when none does.
func (e *Env) Leader(ctx context.Context) ([]string, error) {
	p, err := e.DB.Primary(ctx, e.Cluster)
	if err != nil || p == "" {
		return nil, err
	}
	return []string{p}, nil
}

// Primary names the node that leads now.
func (e *Env) Primary(ctx context.Context) (string, error) { return e.DB.Primary(ctx, e.Cluster) }

// Unavailable says a fault cannot be injected into this run, and why: bad
// input for --nemesis, not a failure of the run.
type Unavailable struct {
	Fault string
	Msg   string
}

func (e *Unavailable) Error() string { return e.Msg }

func unavailable(fault, format string, args ...any) error {
	return &Unavailable{Fault: fault, Msg: fmt.Sprintf(format, args...)}
}

var kinds = map[string]Kind{}

// refused are words that name no fault on purpose, with the reason.
var refused = map[string]string{
	"clock": "there is no fault called clock: the clock faults are clock-jump, clock-skew, clock-strobe and clock-jump-quorum",
}

// Register adds a fault; each fault's file calls it from init.
func Register(k Kind) {
	if k.Name == "" || k.Summary == "" || (k.Build == nil && k.Name != None) {
		panic(fmt.Sprintf("nemesis: fault %q needs a name, a summary and a Build", k.Name))
	}
	if _, dup := kinds[k.Name]; dup {
		panic(fmt.Sprintf("nemesis: fault %q registered twice", k.Name))
	}
	for _, f := range k.Flags {
		if f.Name == "" || f.Check == nil {
			panic(fmt.Sprintf("nemesis: fault %q: flag %q needs a name and a Check", k.Name, f.Name))
		}
	}
	kinds[k.Name] = k
}

func init() {
	Register(Kind{Name: None, Summary: "no faults: the lock alone, as a baseline"})
}

// Lookup finds a fault by its word.
func Lookup(name string) (Kind, bool) {
	k, ok := kinds[name]
	return k, ok
}

// Kinds is a --nemesis list resolved: the Kind of each fault it names, in
// its order, none left out. The harness resolves a test's list once, as it
// looks its backend up once, and asks the Kinds from then on, never the
// words again.
type Kinds []Kind

// Resolve checks names (CheckNames) and looks each fault up, once.
func Resolve(names []string) (Kinds, error) {
	if err := CheckNames(names); err != nil {
		return nil, err
	}
	return known(names), nil
}

// known is the Kinds of the words in names that name a fault (none and
// unknown words left out): the name-based questions below ask it.
func known(names []string) Kinds {
	var out Kinds
	for _, n := range names {
		if k, ok := kinds[n]; ok && n != None {
			out = append(out, k)
		}
	}
	return out
}

// Names are the faults' words, in order.
func (ks Kinds) Names() []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.Name
	}
	return out
}

// AimsAtHolder reports whether any fault aims at a lease holder
// (Kind.AimsAtHolder): the faults under which a run with no exposure is
// unknown by default.
func (ks Kinds) AimsAtHolder() bool {
	return slices.ContainsFunc(ks, func(k Kind) bool { return k.AimsAtHolder })
}

// Contended is the faults that limit side-by-side runs to one an engine
// core (Kind.Contended), in order, each once, with its reason.
func (ks Kinds) Contended() (faults []string, why []string) {
	for _, k := range ks {
		if k.Contended != "" && !slices.Contains(faults, k.Name) {
			faults = append(faults, k.Name)
			why = append(why, k.Contended)
		}
	}
	return faults, why
}

// NeedsFailpoints says whether a fault arms failpoints (Needs.Failpoints):
// the servers must run their failpoint build.
func (ks Kinds) NeedsFailpoints() bool {
	return slices.ContainsFunc(ks, func(k Kind) bool { return k.Needs.Failpoints })
}

// Prepares says whether a fault has a Prepare step: its servers must
// start under it, so the run needs a cluster of its own.
func (ks Kinds) Prepares() bool {
	return slices.ContainsFunc(ks, func(k Kind) bool { return k.Prepare != nil })
}

// Prepare runs the Prepare step of every fault that has one.
func (ks Kinds) Prepare(ctx context.Context, env *Env) error {
	for _, k := range ks {
		if k.Prepare != nil {
			if err := k.Prepare(ctx, env); err != nil {
				return fmt.Errorf("preparing fault %s: %w", k.Name, err)
			}
		}
	}
	return nil
}

// Check says why the first fault that cannot be injected into a run with
// settings s cannot (an *Unavailable), or nil when all can.
func (ks Kinds) Check(s Settings) error {
	for _, k := range ks {
		if err := k.check(s); err != nil {
			return err
		}
	}
	return nil
}

// Build makes the faults for one run, checking each against env's
// settings first.
func (ks Kinds) Build(ctx context.Context, env *Env) ([]Fault, error) {
	var out []Fault
	for _, k := range ks {
		if err := k.check(env.Settings); err != nil {
			return nil, err
		}
		if k.Needs.Docker && len(env.ServerNodes) == 0 {
			return nil, fmt.Errorf("fault %s: the cluster has no server nodes", k.Name)
		}
		f, err := k.Build(ctx, env)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

// AimedAtHolders is Kinds.AimsAtHolder of the named faults, for callers
// that hold words (a stored run's parameters, --help).
func AimedAtHolders(names []string) bool { return known(names).AimsAtHolder() }

// Contended is Kinds.Contended of the named faults.
func Contended(names []string) (faults []string, why []string) { return known(names).Contended() }

// Names lists every fault's word: none first, then by name.
func Names() []string {
	var out []string
	for n := range kinds {
		if n != None {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return append([]string{None}, out...)
}

// InProcess lists the faults an in-process run can inject (none aside).
func InProcess() []string {
	var out []string
	for _, n := range Names() {
		if n != None && !kinds[n].Needs.Docker {
			out = append(out, n)
		}
	}
	return out
}

// Help lists every fault with its summary, one per line, for --help.
func Help() string {
	names := Names()
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, n, kinds[n].Summary)
	}
	return b.String()
}

// owners are the faults as owners of their own flags.
func owners() usage.Owners {
	o := usage.Owners{Chooser: "nemesis"}
	for _, n := range Names() {
		o.List = append(o.List, usage.Owner{Name: n, Flags: kinds[n].Flags})
	}
	return o
}

// Flags lists every fault's own flags, sorted by name, each once.
func Flags() []usage.Flag { return owners().Flags() }

// FlagOwners names the faults that understand flag.
func FlagOwners(flag string) []string { return owners().Of(flag) }

// Injects reports whether the list names any fault (not just none).
func Injects(names []string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return n != None })
}

// CheckNames refuses a --nemesis list that is empty, names a word no
// fault has, or combines none with faults. It needs nothing of the
// cluster.
func CheckNames(names []string) error {
	if len(names) == 0 {
		return fmt.Errorf("empty list (use %s for no faults; accepted: %s)", None, strings.Join(Names(), ", "))
	}
	for _, n := range names {
		if why, ok := refused[n]; ok {
			return fmt.Errorf("%s", why)
		}
		if _, ok := kinds[n]; !ok {
			return fmt.Errorf("unknown fault %q (accepted: %s)", n, strings.Join(Names(), ", "))
		}
		if n == None && len(names) > 1 {
			return fmt.Errorf("%s cannot be combined with other faults", None)
		}
	}
	return nil
}

// CheckFlags refuses a fault's own flag given without a chosen fault that
// owns it, and asks each chosen fault to check its flags' values. It
// ignores options no fault owns (a backend's own flags). Its error is a
// *usage.Error.
func CheckFlags(names []string, options map[string]string) error {
	return owners().Check(names, options)
}

// Check says why fault name cannot be injected into a run with settings s
// (an *Unavailable), or nil when it can. The harness asks it before
// anything is created, and Build asks it again of the cluster set up.
func Check(name string, s Settings) error {
	k, ok := kinds[name]
	if !ok {
		return unavailable(name, "unknown fault %q (accepted: %s)", name, strings.Join(Names(), ", "))
	}
	return k.check(s)
}

func (k Kind) check(s Settings) error {
	name := k.Name
	if k.Needs.Docker && !s.Docker {
		return unavailable(name, "fault %s needs the servers and network of --cluster docker; an in-process run accepts only %s",
			name, strings.Join(InProcess(), ", "))
	}
	if k.Needs.Failpoints && s.Docker && len(s.Failpoints) == 0 {
		why := s.NoFailpoints
		if why == "" {
			why = fmt.Sprintf("backend %s's servers have no failpoints", s.Backend)
		}
		return unavailable(name, "fault %s arms failpoints in the servers' code, and %s", name, why)
	}
	if k.Check != nil {
		if err := k.Check(s); err != nil {
			// A fault's own flag given wrongly names that flag.
			var ue *usage.Error
			if errors.As(err, &ue) {
				return err
			}
			return unavailable(name, "%v", err)
		}
	}
	if s.Docker && s.Servers < k.Needs.Servers {
		return unavailable(name, "%s needs at least %d server nodes, and backend %s runs on %d here", name, k.Needs.Servers, s.Backend, s.Servers)
	}
	return nil
}

// FaultDuration is how long each of a run's faults stays applied.
func FaultDuration(s Settings) func(Fault) time.Duration {
	return func(f Fault) time.Duration {
		if k, ok := kinds[f.Name()]; ok && k.Duration != nil {
			return k.Duration(s)
		}
		return DurationOfInterval(s)
	}
}

// Prepares is Kinds.Prepares of the named faults.
func Prepares(names []string) bool { return known(names).Prepares() }

// Prepare is Kinds.Prepare of the named faults.
func Prepare(ctx context.Context, names []string, env *Env) error {
	return known(names).Prepare(ctx, env)
}

// Build makes the faults names lists for one run (none makes nothing):
// Kinds.Build of the named faults, after Check of each (an unknown word
// is an *Unavailable).
func Build(ctx context.Context, names []string, env *Env) ([]Fault, error) {
	for _, n := range names {
		if n != None {
			if err := Check(n, env.Settings); err != nil {
				return nil, err
			}
		}
	}
	return known(names).Build(ctx, env)
}
