package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/shellquote"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/nemesis"
	"github.com/fencecheck/fencecheck/runstore"
)

// firstExamples open check --help: the README's first commands, the same
// lines (a test holds them together), so the help and the README give a
// newcomer one way in.
const firstExamples = `  CGO_ENABLED=0 go build -o bin/check ./cmd/check
  bin/check --backend etcd --fencing none --nemesis pause-holder   # exits 1
  bin/check --backend etcd --fencing all --nemesis pause-holder    # exits 0`

const runExample = `  # A paused lease holder writing after its lease ran out, no Docker needed (exits 1)
  check --backend memory --fencing none --nemesis pause --time-limit 10s

  # The same with the storage checking tokens on every op (exits 0)
  check --backend memory --fencing all --nemesis pause --time-limit 10s

  # The targeted pause: freeze the holder right after its read
  check --backend memory --fencing none --nemesis pause-holder

  # As Jepsen users would: 10 tests, 8 clients, stop at the first that is not valid
  check --backend memory --fencing all --nemesis pause --time-limit 10s --test-count 10 --concurrency 8`

// runFlags are the main command's flags: the run's Config and the few
// that are read before it is made.
type runFlags struct {
	cfg                  harness.Config
	nemesis, concurrency string
	testCount            int
	keepGoing            bool
	parallel             int
	preset               string             // --preset: a schedule set for a purpose (preset.go)
	junit                string             // --junit: where the run's JUnit report goes (harness.Outputs)
	options              map[string]*string // the backends' and the faults' own flags
}

func newRootCmd() *cobra.Command {
	rf := &runFlags{options: map[string]*string{}}
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Test whether a distributed lock is actually safe",
		Long: "check tells you whether a distributed lock is actually safe. First, as the README:\n\n" + firstExamples + `

check runs concurrent clients through lock → read → write → release against a
lock service while a nemesis injects faults, records every operation, and checks
the history with porcupine against a model of correctly fenced storage.

Exit codes: 0 valid, 1 invalid, 2 unknown, 254 bad arguments, 255 the test could
not be carried out. Each run writes store/<test>/<time>/ (history.jsonl,
results.json, report.html, linearizability.html, check.log); store/latest points
at the newest.` + faultHelp(),
		Example:       runExample,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return rf.run(cmd) },
	}
	rf.register(cmd.Flags())
	cmd.SetFlagErrorFunc(flagError)
	cmd.SetVersionTemplate("check {{.Version}}\n")
	cmd.AddCommand(newAnalyzeCmd(), newImageCmd(), newClusterCmd(), newLockdCmd(), newStorageCmd(), newAgentCmd(), newProbeCmd(), newAskEndpointsCmd(), newLoopCmd(), newDelayCmd(), newLossyfsCmd())
	cmd.AddCommand(newReportCmd())
	cmd.AddCommand(newServeCmd())
	cmd.AddCommand(newCompareCmd())
	cmd.AddCommand(newClientTestCmd())
	cmd.SetHelpCommand(newHelpCmd())
	refuseUnknownSubcommands(cmd)
	return cmd
}

// run checks the flags that depend on each other and runs the test
// --test-count times.
func (rf *runFlags) run(cmd *cobra.Command) error {
	if err := applyPreset(cmd.Flags(), rf.preset); err != nil {
		return err
	}
	cfg, options := &rf.cfg, rf.options
	nemesis, concurrency, testCount, keepGoing := rf.nemesis, rf.concurrency, rf.testCount, rf.keepGoing
	cfg.Nemesis = splitList(nemesis)
	cfg.Options = map[string]string{}
	for flag, v := range options {
		cfg.Options[flag] = *v
	}
	if listsFailpoints(*cfg) {
		return listFailpoints(cmd.OutOrStdout(), *cfg)
	}
	if cmd.Flags().Changed("concurrency") {
		servers, err := cfg.Servers()
		if err != nil {
			return err
		}
		n, err := parseConcurrency(concurrency, servers)
		if err != nil {
			return usageErr("%v", err)
		}
		if cmd.Flags().Changed("clients") && n != cfg.Clients {
			return usageErr("--concurrency %s and --clients %d disagree: they name the same thing (--concurrency is Jepsen's word for --clients); give one", concurrency, cfg.Clients)
		}
		cfg.Clients = n
	}
	if testCount < 1 || testCount > maxTestCount {
		return usageErr("--test-count: %d is out of range (accepted: 1 to %d)", testCount, maxTestCount)
	}
	cfg.Given = map[string]bool{}
	cmd.Flags().Visit(func(f *pflag.Flag) { cfg.Given[f.Name] = true })
	if !cmd.Flags().Changed("seed") {
		cfg.Seed = rand.Int64N(1 << 40)
	}
	// The test is resolved once, before anything is printed or created:
	// bad input is refused here, and each of --test-count's tests is it
	// again with its own seed and its own outputs (Rerun, WithOutputs).
	test, err := harness.Resolve(*cfg)
	if err != nil {
		return err
	}
	if err := harness.CheckJUnitPath(junitFor(rf.junit, 1, testCount)); err != nil {
		return err
	}
	width := 1
	if cmd.Flags().Changed("parallel") {
		if testCount < 2 {
			return usageErr("--parallel: runs several tests at once, so it needs several tests: add --test-count (e.g. --test-count 10 --parallel %d), or drop --parallel", max(rf.parallel, 2))
		}
		w := harness.EngineWidth(cmd.Context(), runsOnDocker(cfg))
		if err := harness.CheckParallel(rf.parallel, w); err != nil {
			return err
		}
		width = rf.parallel
		if n, why := harness.ContendedWidth(width, w, cfg.Nemesis); why != "" {
			width = n
			fmt.Fprintf(cmd.OutOrStdout(), "check: %s\n", why)
		}
	}
	if keepGoing && testCount < 2 {
		return usageErr("--keep-going: goes on after a test that is not valid, so it needs several tests: add --test-count (e.g. --test-count 10 --keep-going), or drop --keep-going")
	}
	sig, stop := signals()
	defer stop()
	// The tests of one --test-count share their clusters, one after
	// another on each slot; the last are removed at the end.
	var clusters *harness.Clusters
	if testCount > 1 {
		clusters = harness.NewClustersUpTo(width)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := clusters.Close(ctx); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "check: %v\n", err)
		}
	}()
	stdout := cmd.OutOrStdout()
	if width > 1 {
		fmt.Fprintf(stdout, "%d tests, %d at a time, each on its own cluster; each test's lines start with its number\n", testCount, width)
	}
	var outMu sync.Mutex
	return repeat(stdout, testCount, width, keepGoing, cfg.Seed, func() bool { return sig.Stop.Err() != nil },
		func(i int, seed int64) testResult {
			argv := commandLine(cmd, seed)
			t, err := test.Rerun(seed, test.Config().Store)
			if err == nil {
				t, err = t.WithOutputs(harness.Outputs{Command: shellquote.Join(argv), CommandArgv: argv, JUnit: junitFor(rf.junit, i, testCount)})
			}
			if err != nil {
				return testResult{code: harness.ExitUsage, err: err}
			}
			var progress io.Writer = stdout
			if width > 1 {
				pw := &prefixWriter{mu: &outMu, w: stdout, prefix: fmt.Sprintf("[test %d] ", i)}
				defer pw.Flush()
				progress = pw
			}
			out, err := clusters.RunTest(sig, t, progress)
			if err != nil {
				if _, ok := err.(*usage.Error); ok {
					return testResult{code: harness.ExitUsage, err: err}
				}
				dir := ""
				if out != nil && out.Dir != "" {
					dir = out.Dir
					err = fmt.Errorf("%w\n(what was recorded is in %s)", err, out.Dir)
				}
				return testResult{code: harness.ExitFailed, dir: dir, err: err}
			}
			if rf.preset == ciBound {
				printBoundPerMinute(progress, out)
			}
			tr := testResult{code: harness.ExitCode(out.Result.Verdict), dir: out.Dir}
			if x := out.Result.Exposures; x != nil {
				tr.exposures = &x.ExposureCounts
			}
			return tr
		})
}

// register defines the run's flags on f.
func (rf *runFlags) register(f *pflag.FlagSet) {
	cfg, options := &rf.cfg, rf.options
	f.StringVar(&cfg.Backend, "backend", registry.DefaultBackend(), "lock service: "+backendNames())
	f.StringVar(&cfg.Recipe, "recipe", "", "lock recipe (default: the backend's first; memory: lease)")
	f.StringVar(&cfg.Storage, "storage", "", "the protected resource: fenced (the fenced storage node, default), postgres (a row fenced in SQL, any backend, docker only), or etcd (in etcd itself, guarded by the lock; --backend etcd only)")
	f.StringVar(&cfg.ClientDir, "client", "", "run your own lock client: a directory with fencecheck-client.json and your program (docs/client-protocol.md); on the fenced storage, or with --storage postgres (etcd) writing it with its own fence check")
	f.StringVar(&cfg.Fencing, "fencing", "none", "which ops the storage checks tokens on: none, writes, all")
	f.StringVar(&rf.nemesis, "nemesis", noFaults, "comma list of faults; with several, each injection is one of them drawn at random (pause-leader,pause-all mixes Jepsen's two pauses): "+faultNames())
	f.StringVar(&cfg.LeaseCheck, "lease-check", registry.LeaseCheckAll, "what the built-in client checks of its lease: all (a grant whose lock is already gone fails, and every read and write first asks whether the lease still holds) or none (it trusts its grant and never asks, as Jepsen's etcd client did; docs/backends.md says which token each recipe then reports)")
	f.StringVar(&cfg.ClientEndpoints, "client-endpoints", harness.ClientEndpointsAll, "which servers each client speaks to: all, or one (process p only to server p mod n, as Jepsen's clients; etcd and zookeeper)")
	f.IntVar(&cfg.Clients, "clients", 5, "concurrent client processes")
	f.StringVar(&rf.concurrency, "concurrency", "", "Jepsen's name for --clients: a number, or <k>n for k clients per server the backend runs (e.g. 2n: 6 on 3 etcd nodes, 2 on memory's one server)")
	f.IntVar(&rf.testCount, "test-count", 1, "run the test this many times (seeds seed, seed+1, …), stopping at the first run that is not valid; the exit code is the worst verdict")
	f.IntVar(&rf.parallel, "parallel", 1, "with --test-count, run this many tests at once, each on its own cluster; one at a time keeps the stop at the first test that is not valid in order; at most what the engine's memory holds, and one a core under faults that freeze servers (docs/compare.md)")
	f.BoolVar(&rf.keepGoing, "keep-going", false, "with --test-count, run every test even after one that is not valid")
	f.IntVar(&cfg.Keys, "keys", 1, "independent locks, each guarding its own resource")
	f.StringVar((*string)(&cfg.Cluster), "cluster", "", "where the system runs: inprocess (memory only) or docker (default for every backend but memory)")
	f.IntVar(&cfg.Nodes, "nodes", 3, "server nodes: "+registry.NodesUsage())
	f.StringVar(&cfg.ServerVersion, "server-version", "", registry.VersionUsage())
	addEndpointsFlags(f, cfg)
	f.StringVar(&cfg.ServerImage, "server-image", "", "run the lock servers from this image instead of the node image's build, following the official image's conventions, every fault applied from outside it (etcd, redis; e.g. gcr.io/etcd-development/etcd:v3.6.16 or redis:7.2, pulled beforehand: fencecheck never pulls; docs/server-images.md)")
	f.DurationVar(&cfg.TimeLimit, "time-limit", 30*time.Second, "how long the workload runs")
	f.DurationVar(&cfg.LeaseTTL, "lease-ttl", 2*time.Second, "lease length")
	f.DurationVar(&cfg.Work, "work", 10*time.Millisecond, "time a holder spends in its critical section between read and write")
	f.DurationVar(&cfg.Dwell, "hold", 0, "add a uniformly random time in [0, hold] to --work in each critical section (e.g. 500ms)")
	f.Float64Var(&cfg.ReadMix, "read-mix", 0, "share of ops (0 to below 1, drawn per op) that read the storage without taking the lock, presenting no token, as Jepsen's lock-set workload mixes lock-free reads with its locked adds (about 0.5); the rest are locked sections (default 0: every op takes the lock)")
	f.SetAnnotation("read-mix", exampleAnnotation, []string{"0.5"})
	f.DurationVar(&cfg.PauseDuration, "pause-duration", 0, "how long a pause lasts, and the least time any other fault is held (default 2 × lease-ttl)")
	f.DurationVar(&cfg.NemesisInterval, "nemesis-interval", 2*time.Second, "rest between a heal and the next fault (with jitter)")
	f.DurationVar(&cfg.OpTimeout, "op-timeout", 0, "after this an op's outcome is unknown (info); default longer than any pause")
	f.DurationVar(&cfg.AcquireTimeout, "acquire-timeout", 0, "how long a section waits for the lock before it gives up (the acquire fails, no read or write; e.g. 5s, as Jepsen's etcd client's Lock call); default the op timeout")
	f.DurationVar(&cfg.CheckTimeout, "check-timeout", 5*time.Minute, "bound on the check's time; past it the verdict is unknown")
	addCheckMemoryFlag(f, &cfg.CheckMemory)
	f.BoolVar(&cfg.StopOnViolation, "stop-on-violation", false, "end the workload as soon as the live check finds a violation (heal, final reads, check and report follow; exit 1)")
	f.IntVar(&cfg.Exposures, "exposures", 0, "end the workload once this many exposures were seen, or at --time-limit, whichever comes first (e.g. --exposures 100 --time-limit 30m: run until 100 holders outlived their lease; 0: off)")
	f.IntVar(&cfg.MinExposures, "min-exposures", 0, "a run with fewer exposures than this (moments a superseded lease holder's late op met the storage) is unknown (exit 2), not valid (default 1 under a fault aimed at a holder: "+aimedFaults()+"; else 0; docs/results.md)")
	f.Int64Var(&cfg.Seed, "seed", 0, "seed for the generator and the nemesis (default: random, printed)")
	f.StringVar(&cfg.Store, "store", runstore.DefaultRoot, "directory for the runs' results")
	// Each backend's own flags (e.g. --redis-persistence), as it describes them.
	for _, o := range registry.Flags() {
		options[o.Name] = f.String(o.Name, "", o.Usage)
	}
	// Each fault's own flags, as it describes them.
	for _, o := range faultFlags() {
		options[o.Name] = f.String(o.Name, "", o.Usage)
	}
	f.StringVar(&rf.junit, "junit", "", "also write a JUnit XML report (one test case per key) to this file, for CI")
	f.BoolVar(&cfg.KeepCluster, "keep-cluster", false, "leave the Docker cluster up (healed) after the run; check cluster down removes it")
	f.BoolVar(&cfg.GrantAfterEachCrash, "grant-after-each-crash", false, "a valid run must show the lock granted after every crash (kill, failpoint, power cut), not only after one; otherwise it is unknown (exit 2): a grant a crash lost shows only in a later grant (docs/results.md)")
	f.BoolVar(&cfg.PowerLayer, "power-layer", false, "lay the power faults' filesystem layer over the servers' data directory with no power fault: nothing is ever dropped, the servers only run on it (to measure what it costs; docs/power-loss.md)")
	f.BoolVar(&cfg.FreshCluster, "fresh-cluster", false, "with --test-count, give every test a new Docker cluster (default: a test takes the one the test before it left, with its processes killed and its data removed)")
	f.StringVar(&cfg.AgentBinary, "agent-binary", "", "static check binary to run in the containers (default: $FENCECHECK_BINARY, else this one)")
	f.BoolVar(&cfg.VerboseBuild, "verbose-build", false, "stream the full output of the image builds and compiles a run needs (default: one line per step, the rest in a log file)")
	f.StringVar(&rf.preset, "preset", "", "start from a preset schedule, flags given overriding it: "+ciBound+" (fenced pause-holder on 10 keys, 10 holders frozen at once, each thawed once its successor has read, 500ms rests, 3m; prints the exposures a minute and the bound they reach; docs/results.md)")
	f.StringVar(&cfg.Name, "name", "", "the test's name in the store, one directory name (default: backend-recipe-storage[-fencing]-nemesis, e.g. memory-lease-fenced-none-pause)")
}

// noFaults is --nemesis's default: no faults.
const noFaults = nemesis.None

// faultNames lists the --nemesis words, as the fault registry knows them.
func faultNames() string { return strings.Join(nemesis.Names(), ", ") }

// faultHelp is --help's list of faults, each with its summary.
func faultHelp() string { return "\n\nFaults (--nemesis):\n" + strings.TrimRight(nemesis.Help(), "\n") }

// aimedFaults lists the faults aimed at a lease holder.
func aimedFaults() string {
	var out []string
	for _, n := range nemesis.Names() {
		if nemesis.AimedAtHolders([]string{n}) {
			out = append(out, n)
		}
	}
	return strings.Join(out, ", ")
}

// listsFailpoints says whether the command asks for the failpoints'
// list (--failpoint list) rather than a test.
func listsFailpoints(cfg harness.Config) bool {
	return cfg.Options[nemesis.FailpointFlag.Name] == nemesis.FailpointList
}

// listFailpoints prints the failpoints of the servers cfg describes, one
// a line (--failpoint list), and runs nothing.
func listFailpoints(w io.Writer, cfg harness.Config) error {
	names, err := harness.Failpoints(cfg)
	if err != nil {
		return err
	}
	for _, n := range names {
		fmt.Fprintln(w, n)
	}
	return nil
}

// faultFlags are the faults' own flags.
func faultFlags() []usage.Flag { return nemesis.Flags() }

func backendNames() string {
	return strings.Join(registry.Names(), ", ")
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// commandLine is the exact command to rerun this test, seed included, as
// its arguments (results.json keeps them as a list; shellquote.Join writes
// them as a line a shell reads back the same).
func commandLine(cmd *cobra.Command, seed int64) []string {
	argv := []string{"check"}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		// The command reruns this one test: no repetition, and the client
		// count as --clients (which --concurrency has set).
		switch f.Name {
		case "seed", "test-count", "keep-going", "parallel":
			return
		case "concurrency":
			argv = append(argv, "--clients", cmd.Flags().Lookup("clients").Value.String())
			return
		case "clients":
			if cmd.Flags().Changed("concurrency") {
				return
			}
		}
		if f.Value.Type() == "bool" {
			// "--flag true" would read "true" as an argument.
			argv = append(argv, fmt.Sprintf("--%s=%s", f.Name, f.Value.String()))
			return
		}
		argv = append(argv, "--"+f.Name, f.Value.String())
	})
	return append(argv, "--seed", fmt.Sprint(seed))
}

// runsOnDocker says whether the run's servers are Docker containers: its
// --cluster, else its backend's first cluster.
func runsOnDocker(cfg *harness.Config) bool {
	if cfg.Cluster != "" {
		return cfg.Cluster != registry.ClusterInProcess
	}
	b, ok := registry.Lookup(cfg.Backend)
	return !ok || b.Clusters[0] != registry.ClusterInProcess
}
