package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/compare"
	"github.com/fencecheck/fencecheck/compare/result"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/words"
	"github.com/fencecheck/fencecheck/runstore"
)

// compareFlags are `check compare`'s flags as given.
type compareFlags struct {
	spec                                                                             compare.Spec
	backends, storages, faults, fencing, leaseChecks, serverVersions, dir, shardFlag string
	// expect is --expect: a file of each cell's expected verdict.
	expect  string
	readMix float64
}

func newCompareCmd() *cobra.Command {
	var cf compareFlags
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Run a matrix of backends × storages and fencing × faults and tabulate the verdicts",
		Long: `compare runs every backend/recipe/storage/fencing combination (one row each)
under every fault (one column each), --runs times per cell, every run with
the same --clients, --keys, --nodes and --lease-ttl, and writes
compare.html, compare.md and compare.json into --store (default
store/compare/<time>/), each run's own directory inside it. Each cell shows the
verdicts (e.g. "invalid 3/3"), the median time to the first violation,
acquisitions per second and the share of acquisitions that succeeded, and links
to the runs' reports.

A bare backend name means every recipe (its default recipe under --preset
quick); backend:recipe picks one. memory runs in-process; the others in Docker.

Presets: quick (every backend but memory with its default recipe, storage
fenced, fencing none and all, fault pause-holder, 1 run of 15s); full (every
recipe, storages fenced, etcd's own and postgres, fencing none, writes and all,
faults pause-holder, pause, partition and kill, 3 runs); jepsen-etcd (Jepsen's
etcd 3.4.3 lock experiment: etcd lock-rpc on Debian's etcd 3.4, 5 nodes, 5
clients each bound to one node, lease 2s, a critical section of 10ms plus
0-2s, half the ops lock-free reads (--read-mix 0.5, Jepsen's gen/mix of
adds and reads), a lock waited for at most 5s by the client (--acquire-timeout
5.5s, of which the agent keeps 0.5s: Jepsen's client timeout), the leader or every node paused for 5s every 5s (the column
pause-leader+pause-all); rows: the client that trusts its grant
(--lease-check none) unfenced, with --fencing all and with etcd's guarded
transactions, and the careful client unfenced; 10 full-length runs of 120s
each, Jepsen's time limit; see docs/jepsen-etcd.md); kleppmann (the clock faults against
Redlock and the other recipes: redis redlock and setnx, postgres lease, etcd and
zookeeper × clock-jump on a majority, clock-jump-quorum, clock-strobe and
pause-holder × fencing none and all, a critical section of 1s; see
docs/kleppmann-redlock.md); power (each backend's safe and relaxed
durability settings, as the backend describes them — etcd
--etcd-unsafe-no-fsync, nats --nats-sync-interval, postgres
--postgres-synchronous-commit, redis --redis-persistence, zookeeper
--zookeeper-force-sync — one row each, fenced, under the power fault that
suits its servers, the other column n/a; 10s between a restart and the next
cut; 3 runs of 30s); known-bugs (the lock services' published bugs, as
each backend lists them: for each bug one row on the release that had it and
one on the release that fixed it, the same workload under the bug's own fault,
every run held to a grant after each crash (--grant-after-each-crash); 3 runs
each; docs/known-bugs.md, whose known-bugs.expect pins the table); redis-deployments
(Redis as people deploy it: one master with setnx and setnx-incr, Redlock on
five masters, a master with replicas and Sentinels with setnx, setnx-incr and
setnx-incr-wait, fenced, each under the faults that have meaning for it:
pause-holder and kill-leader, pause-holder and kill, every fault that makes
Sentinel fail over; 3 runs of 20s). Flags given override the preset's values
(--faults runs every row under every fault given).

A column a+b of --faults is one schedule that draws a or b for each
injection. --lease-checks all,none gives each row for the careful client
and for the one that trusts its grant.

--shard I/N runs only the I-th of N slices of the matrix's (cell, run) pairs
(the same cut on every machine, balanced by each run's expected time) and
writes a partial compare.json naming the matrix, the shard and its runs;
'check compare merge DIR...' puts the shards' directories together into the
page one machine would have written (docs/ci-example.md).

compare reports, it does not judge, unless asked to: it exits 0 when every cell
ran whatever the verdicts, 255 when a run could not be carried out (the cell
says "error"), 254 on bad arguments. --expect FILE pins verdicts: each line
"ROW × FAULT: VERDICT" (valid, invalid, unknown, not-valid or n/a; the row as the
tables name it), and compare exits 1 naming each cell whose verdict differs; a
cell the matrix does not have exits 254 before anything runs. Every comparison
writes its own cells that way as compare.expect, ready to pin.`,
		Example: `  check compare --preset quick
  check compare --backends etcd,redis:setnx-incr --faults pause-holder,partition --runs 3
  check compare --preset jepsen-etcd
  check compare --preset kleppmann
  check compare --preset power
  check compare --preset redis-deployments --runs 5
  check compare --preset known-bugs --expect docs/known-bugs.expect
  check compare --backends memory --faults pause-holder,pause --time-limit 10s
  check compare --backends etcd,zookeeper --nodes 5 --clients 10 --keys 3 --lease-ttl 3s
  check compare --preset quick --expect pinned.expect   # exit 1 when a cell's verdict moves
  check compare --preset quick --seed 42 --shard 2/3 --store shard-2   # one job of a CI matrix
  check compare merge --out merged shard-1 shard-2 shard-3`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cf.run(cmd) },
	}
	cf.register(cmd.Flags())
	cmd.SetFlagErrorFunc(flagError)
	cmd.AddCommand(newCompareMergeCmd())
	return cmd
}

// register defines the flags on f.
func (cf *compareFlags) register(f *pflag.FlagSet) {
	spec := &cf.spec
	f.StringVar(&spec.Preset, "preset", "", "start from a preset: "+strings.Join(compare.Presets, ", "))
	f.StringVar(&cf.backends, "backends", "", "comma list of backends or backend:recipe (default: every backend but memory, i.e. "+strings.Join(compare.DefaultBackends(), ",")+"; memory runs in-process when named)")
	f.StringArrayVar(&spec.Clients, "client", nil, "your own lock client, repeatable: BACKEND:DIR, or DIR to run it against each of --backends (then --backends adds no built-in rows); rows named after the client, fenced storage, each --fencing (docs/client-protocol.md)")
	f.StringVar(&cf.storages, "storages", "", "comma list of storages: fenced, postgres, or a backend's own such as etcd (default fenced)")
	f.StringVar(&cf.faults, "faults", "", "comma list of faults, one column each; a+b is one column drawing a or b for each injection (default pause-holder): "+faultNames())
	f.StringVar(&cf.fencing, "fencing", "", "comma list of fencing modes for the shared storages (default none,all; power, redis-deployments: all)")
	f.StringVar(&cf.leaseChecks, "lease-checks", "", "comma list of what the built-in client checks of its lease, one row each: all (careful, the default) or none (trusts its grant); jepsen-etcd: none, plus all unfenced")
	f.StringVar(&cf.serverVersions, "server-versions", "", "comma list of server builds, one row each for a backend that has several (etcd: 3.4,3.5,3.6,3.7; 3.5 and 3.7 are compiled on first use); default each backend's first (jepsen-etcd: 3.4)")
	f.StringVar(&spec.Base.ClientEndpoints, "client-endpoints", "", "which servers each client speaks to: all (default) or one (process p to server p mod n; etcd and zookeeper; jepsen-etcd: one)")
	f.IntVar(&spec.Runs, "runs", 0, "runs per cell (default 1; full, power, known-bugs, redis-deployments: 3; jepsen-etcd: 10)")
	f.DurationVar(&spec.TimeLimit, "time-limit", 0, "workload length of each run (default 20s; quick: 15s; power: 30s; jepsen-etcd: 120s)")
	f.Int64Var(&spec.Seed, "seed", 0, "seed of each cell's first run; run r uses seed+r (default: random, printed)")
	f.IntVar(&spec.Parallel, "parallel", 0, "runs at once, each on its own cluster (default from the engine: one a core, within half its memory at 2 GiB a slot; 1 runs them one by one; faults that freeze servers never go more than one a core; docs/compare.md)")
	f.StringVar(&cf.shardFlag, "shard", "", "run only shard I of N of the matrix's runs, e.g. 2/3 (needs --seed; merge the shards with 'check compare merge')")
	f.StringVar(&cf.expect, "expect", "", "a file of expected verdicts, one cell a line (ROW × FAULT: VERDICT, as compare.expect in a comparison's directory writes them): exit 1, naming the cell, when a verdict differs (docs/compare.md)")
	f.StringVar(&cf.dir, "store", "", "directory for the tables and the runs (default store/compare/<time>/)")
	// Applied to every cell, and checked for every cell before the first runs.
	base := compare.DefaultBase()
	f.IntVar(&spec.Base.Clients, "clients", base.Clients, "concurrent client processes in every run")
	f.IntVar(&spec.Base.Keys, "keys", base.Keys, "independent locks in every run")
	f.IntVar(&spec.Base.Nodes, "nodes", base.Nodes, "server nodes of every docker cluster ("+registry.NodesUsage()+")")
	f.DurationVar(&spec.Base.LeaseTTL, "lease-ttl", base.LeaseTTL, "lease length in every run")
	f.BoolVar(&spec.Base.FreshCluster, "fresh-cluster", false, "give every run a new Docker cluster (default: a run takes the cluster a finished run of the same backend, server count and clients left, with its processes killed and its data removed)")
	f.BoolVar(&spec.FullTime, "full-time", false, "run every cell for its whole time limit (default: a run ends its workload at its first violation)")
	// For short runs in tests and by hand; the defaults are the root command's.
	f.DurationVar(&spec.Base.NemesisInterval, "nemesis-interval", 0, "rest between faults (default 2s)")
	f.DurationVar(&spec.Base.Work, "work", 0, "critical-section time (default 10ms)")
	f.DurationVar(&spec.Base.Dwell, "hold", 0, "add a uniformly random time in [0, hold] to each critical section (default 0)")
	f.DurationVar(&spec.Base.AcquireTimeout, "acquire-timeout", 0, "how long a section waits for the lock before it gives up (default the op timeout; jepsen-etcd: 5.5s, of which the client in its container gets 5s, Jepsen's etcd client's timeout)")
	f.Float64Var(&cf.readMix, "read-mix", 0, "share of each run's ops (0 to below 1) that read the storage without taking the lock, presenting no token (default 0; jepsen-etcd: 0.5, as Jepsen's gen/mix of adds and reads)")
	f.SetAnnotation("read-mix", exampleAnnotation, []string{"0.5"})
	f.StringVar(&spec.Base.AgentBinary, "agent-binary", "", "static check binary to run in the containers")
	f.BoolVar(&spec.Base.VerboseBuild, "verbose-build", false, "stream the full output of the image builds and compiles (default: one line per step, the rest in a log file)")
	addCheckMemoryFlag(f, &spec.Base.CheckMemory)
	f.IntVar(&spec.Base.MinExposures, "min-exposures", 0, "a run with fewer exposures than this is unknown, not valid (default 1 in the columns of a fault aimed at a holder: "+aimedFaults()+"; else 0)")
	for _, h := range []string{"nemesis-interval", "work", "agent-binary"} {
		f.MarkHidden(h)
	}
}

// run expands the matrix the flags describe, runs it (or the shard of it
// asked for) and says how it went in the exit code.
func (cf *compareFlags) run(cmd *cobra.Command) error {
	spec := &cf.spec
	var shard compare.Shard
	if cmd.Flags().Changed("shard") {
		var err error
		if shard, err = compare.ParseShard(cf.shardFlag); err != nil {
			return err
		}
	}
	spec.Backends = splitList(cf.backends)
	spec.Storages = splitList(cf.storages)
	spec.Faults = splitList(cf.faults)
	spec.Fencing = splitList(cf.fencing)
	spec.LeaseChecks = splitList(cf.leaseChecks)
	spec.ServerVersions = splitList(cf.serverVersions)
	for flag, list := range map[string]string{"backends": cf.backends, "storages": cf.storages, "faults": cf.faults, "fencing": cf.fencing, "lease-checks": cf.leaseChecks, "server-versions": cf.serverVersions} {
		if cmd.Flags().Changed(flag) && len(splitList(list)) == 0 {
			return usageErr("--%s: empty list", flag)
		}
	}
	if cmd.Flags().Changed("runs") && spec.Runs == 0 {
		return compare.CheckRuns(0)
	}
	if cmd.Flags().Changed("time-limit") && spec.TimeLimit == 0 {
		return compare.CheckTimeLimit(0)
	}
	// Zero would mean "the default" to the matrix: refuse it here.
	for flag, v := range map[string]int64{"clients": int64(spec.Base.Clients), "keys": int64(spec.Base.Keys),
		"nodes": int64(spec.Base.Nodes), "lease-ttl": int64(spec.Base.LeaseTTL)} {
		if cmd.Flags().Changed(flag) && v <= 0 {
			return usageErr("--%s: %s is out of range: it must be positive (e.g. %s)", flag, cmd.Flags().Lookup(flag).Value, cmd.Flags().Lookup(flag).DefValue)
		}
	}
	// Not given: the preset's value, else the default.
	for flag, v := range map[string]any{"clients": &spec.Base.Clients, "keys": &spec.Base.Keys,
		"nodes": &spec.Base.Nodes, "lease-ttl": &spec.Base.LeaseTTL} {
		if !cmd.Flags().Changed(flag) {
			switch p := v.(type) {
			case *int:
				*p = 0
			case *time.Duration:
				*p = 0
			}
		}
	}
	if cmd.Flags().Changed("min-exposures") {
		if err := minExposuresValid(spec.Base.MinExposures); err != nil {
			return err
		}
		if spec.Base.Given == nil {
			spec.Base.Given = map[string]bool{}
		}
		spec.Base.Given["min-exposures"] = true
	}
	spec.ReadMix = nil
	if cmd.Flags().Changed("read-mix") {
		spec.ReadMix = &cf.readMix
	}
	if !cmd.Flags().Changed("seed") {
		spec.Seed = rand.Int64N(1 << 40)
	}
	m, err := compare.Expand(*spec)
	if err != nil {
		return err
	}
	var expected []compare.Expectation
	if cmd.Flags().Changed("expect") {
		if shard.N > 0 {
			return usageErr("--expect judges whole cells, and a shard runs only some of their runs: drop --expect from the shards (each cell's verdict is in the merged compare.md)")
		}
		if expected, err = compare.ReadExpectations(cf.expect); err != nil {
			return err
		}
		if err := m.CheckExpectations(expected); err != nil {
			return err
		}
	}
	if err := setWidth(cmd, m); err != nil {
		return err
	}
	if cf.dir == "" {
		cf.dir = runstore.CompareDir(runstore.DefaultRoot, time.Now())
	}
	if err := harness.CheckStoreDir(cf.dir); err != nil {
		return err
	}
	sig, stop := signals()
	defer stop()
	var c *result.Comparison
	if shard.N > 0 {
		if !cmd.Flags().Changed("seed") {
			// Every shard must draw the same seed: a random one would
			// make each shard's matrix another.
			return usageErr("--shard needs --seed: every shard must run the same matrix, seed included (e.g. --seed %d)", spec.Seed)
		}
		c, err = compare.RunShard(sig, m, shard, cf.dir, cmd.OutOrStdout())
	} else {
		c, err = compare.Run(sig, m, cf.dir, cmd.OutOrStdout())
	}
	if err != nil {
		return &exitError{harness.ExitFailed, err}
	}
	if shard.N == 0 {
		if err := m.WriteExpect(cf.dir, c); err != nil {
			fmt.Fprintf(cmd.OutOrStdout(), "compare: also: writing %s: %v\n", runstore.Comparison(cf.dir).Expect(), err)
		}
	}
	unmet := m.Unmet(c, expected)
	for _, u := range unmet {
		fmt.Fprintf(cmd.OutOrStdout(), "compare: not as expected: %s\n", u)
	}
	if code := compare.ExitCode(c); code != 0 {
		why := fmt.Sprintf("%s could not be carried out", words.Plural(c.Errors, "run"))
		if c.Interrupted {
			why = "interrupted before every cell ran"
		}
		return &exitError{code, fmt.Errorf("%s (see %s)", why, runstore.Comparison(cf.dir).Markdown())}
	}
	if len(unmet) > 0 {
		return &exitError{harness.ExitInvalid, fmt.Errorf("%s not as --expect %s says: %s (see %s)",
			words.PluralOf(len(unmet), "cell is", "cells are"), cf.expect, strings.Join(unmet, "; "), runstore.Comparison(cf.dir).Markdown())}
	}
	return nil
}

// setWidth gives m its --parallel: the flag's value, checked against what
// the engine holds, or the engine's default, printed with its reasons.
func setWidth(cmd *cobra.Command, m *compare.Matrix) error {
	w := harness.EngineWidth(cmd.Context(), m.NeedsDocker())
	if cmd.Flags().Changed("parallel") {
		if err := harness.CheckParallel(m.Parallel, w); err != nil {
			return err
		}
	} else {
		m.Parallel = w.N
		fmt.Fprintf(cmd.OutOrStdout(), "compare: %d runs at a time (%s; --parallel sets it)\n", w.N, w.Why)
	}
	if n, why := harness.ContendedWidth(m.Parallel, w, m.FaultNames()); why != "" {
		m.Parallel = n
		fmt.Fprintf(cmd.OutOrStdout(), "compare: %s\n", why)
	}
	return nil
}
