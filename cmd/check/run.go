package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fencecheck/fencecheck/harness"
)

const runExample = `  # The seed's anomaly, no Docker needed: an unfenced lease under pauses (exits 1)
  check --backend memory --fencing none --nemesis pause --time-limit 10s

  # The same with the storage checking tokens on every op (exits 0)
  check --backend memory --fencing all --nemesis pause --time-limit 10s

  # The targeted pause: freeze the holder right after its read
  check --backend memory --fencing none --nemesis pause-holder`

func newRootCmd() *cobra.Command {
	cfg := harness.Config{}
	var nemesis string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Test whether a distributed lock is actually safe",
		Long: `check runs concurrent clients through lock → read → write → release against a
lock service while a nemesis injects faults, records every operation, and checks
the history with porcupine against a model of correctly fenced storage.

Exit codes: 0 valid, 1 invalid, 2 unknown, 254 bad arguments, 255 the test could
not be carried out. Each run writes store/<test>/<time>/ (history.jsonl,
results.json, report.html, linearizability.html, check.log); store/latest points
at the newest.`,
		Example:       runExample,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Nemesis = splitList(nemesis)
			if !cmd.Flags().Changed("seed") {
				cfg.Seed = rand.Int64N(1 << 40)
			}
			cfg.Command = commandLine(cmd, cfg.Seed)
			sig, stop := signals()
			defer stop()
			out, err := harness.Run(sig, cfg, cmd.OutOrStdout())
			if err != nil {
				if _, ok := err.(*harness.UsageError); ok {
					return err
				}
				if out != nil && out.Dir != "" {
					err = fmt.Errorf("%w\n(what was recorded is in %s)", err, out.Dir)
				}
				return &exitError{harness.ExitFailed, err}
			}
			return &exitError{harness.ExitCode(out.Result.Verdict), fmt.Errorf("")}
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Backend, "backend", "memory", "lock service: "+backendNames())
	f.StringVar(&cfg.Recipe, "recipe", "", "lock recipe (default: the backend's first; memory: lease)")
	f.StringVar(&cfg.Storage, "storage", "", "the protected resource: fenced (the fenced storage node), or etcd (in etcd itself, guarded by the lock; --backend etcd only)")
	f.StringVar(&cfg.Fencing, "fencing", "none", "which ops the storage checks tokens on: none, writes, all")
	f.StringVar(&nemesis, "nemesis", "none", "comma list of faults: "+strings.Join(harness.Faults, ", "))
	f.IntVar(&cfg.Clients, "clients", 5, "concurrent client processes")
	f.IntVar(&cfg.Keys, "keys", 1, "independent locks, each guarding its own resource")
	f.StringVar(&cfg.Cluster, "cluster", "", "where the system runs: inprocess (memory only) or docker (default for every backend but memory)")
	f.IntVar(&cfg.Nodes, "nodes", 3, "server nodes (docker clusters): 3 or 5")
	f.StringVar(&cfg.ServerVersion, "server-version", "", "server build where there are several (etcd: 3.6 or 3.4)")
	f.DurationVar(&cfg.TimeLimit, "time-limit", 30*time.Second, "how long the workload runs")
	f.DurationVar(&cfg.LeaseTTL, "lease-ttl", 2*time.Second, "lease length")
	f.DurationVar(&cfg.Work, "work", 10*time.Millisecond, "time a holder spends in its critical section between read and write")
	f.DurationVar(&cfg.PauseDuration, "pause-duration", 0, "how long a pause lasts (default 2 × lease-ttl)")
	f.DurationVar(&cfg.NemesisInterval, "nemesis-interval", 2*time.Second, "rest between a heal and the next fault (with jitter)")
	f.DurationVar(&cfg.OpTimeout, "op-timeout", 0, "after this an op's outcome is unknown (info); default longer than any pause")
	f.DurationVar(&cfg.CheckTimeout, "check-timeout", 5*time.Minute, "bound on the check's time; past it the verdict is unknown")
	addCheckMemoryFlag(f, &cfg.CheckMemory)
	f.BoolVar(&cfg.StopOnViolation, "stop-on-violation", false, "end the workload as soon as the live check finds a violation (heal, final reads, check and report follow; exit 1)")
	f.Int64Var(&cfg.Seed, "seed", 0, "seed for the generator and the nemesis (default: random, printed)")
	f.StringVar(&cfg.Store, "store", "store", "directory for the runs' results")
	f.StringVar(&cfg.RedisPersistence, "redis-persistence", "", "Redis servers' persistence: default (the server's own), none, aof-everysec, aof-always")
	f.StringVar(&cfg.JUnit, "junit", "", "also write a JUnit XML report (one test case per key) to this file, for CI")
	f.BoolVar(&cfg.KeepCluster, "keep-cluster", false, "leave the Docker cluster up (healed) after the run; check cluster down removes it")
	f.StringVar(&cfg.AgentBinary, "agent-binary", "", "static check binary to run in the containers (default: $FENCECHECK_BINARY, else this one)")
	f.StringVar(&cfg.Name, "name", "", "the test's name in the store (default: backend-recipe-fencing-nemesis)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr("%v", err) })
	cmd.AddCommand(newAnalyzeCmd(), newImageCmd(), newClusterCmd(), newLockdCmd(), newStorageCmd(), newAgentCmd(), newProbeCmd(), newLoopCmd(), newDelayCmd())
	cmd.AddCommand(newReportCmd())
	cmd.AddCommand(newServeCmd())
	cmd.AddCommand(newCompareCmd())
	return cmd
}

func backendNames() string {
	var ns []string
	for _, b := range harness.Backends {
		ns = append(ns, b.Name)
	}
	return strings.Join(ns, ", ")
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

// commandLine is the exact command to rerun this test, seed included.
func commandLine(cmd *cobra.Command, seed int64) string {
	parts := []string{"check"}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch {
		case f.Name == "seed":
		case f.Value.Type() == "bool":
			// "--flag true" would read "true" as an argument.
			parts = append(parts, fmt.Sprintf("--%s=%s", f.Name, f.Value.String()))
		default:
			parts = append(parts, fmt.Sprintf("--%s %s", f.Name, f.Value.String()))
		}
	})
	parts = append(parts, fmt.Sprintf("--seed %d", seed))
	return strings.Join(parts, " ")
}
