package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/internal/usage"
	"github.com/fencecheck/fencecheck/internal/words"
)

func newClientTestCmd() *cobra.Command {
	var cfg harness.Config
	cmd := &cobra.Command{
		Use:   "client-test --client DIR --backend B",
		Short: "Try your own lock client against a real service before a long run",
		Long: `client-test starts a small real cluster of the backend (its servers, the fenced
storage, two client containers), runs the program of the client directory in
them and exercises the client protocol (docs/client-protocol.md): the ready
handshake, acquire, read, a write stopped at its checkpoint, an unknown op, a
second process on the same key (kept out while the first holds the lock, its
acquire answered within its deadline; let in after the release). It prints one
line per check, and for a check that failed what was expected and the lines
exchanged. With --storage postgres (or etcd) the client writes that storage
with its own fence check, and fencecheck also reads back what the write left
there. Exit 0 when every check passed, 1 when one failed.`,
		Example: "  check client-test --client examples/clients/kazoo --backend zookeeper\n  check client-test --client examples/clients/pg-kazoo --backend zookeeper --storage postgres\n  check client-test --client examples/clients/redsync --backend redis --nodes 5",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.ClientDir == "" {
				return usageErr("--client: name the client directory (the one that holds fencecheck-client.json)")
			}
			if !cmd.Flags().Changed("backend") {
				return usageErr("--backend: name the lock service your client speaks to: %s", registry.OrList(registry.OpenToClients()))
			}
			cfg.Given = map[string]bool{"nodes": cmd.Flags().Changed("nodes")}
			sig, stop := signals()
			defer stop()
			failed, err := harness.ClientTest(sig.Stop, cfg, cmd.OutOrStdout())
			if err != nil {
				if _, ok := err.(*usage.Error); ok {
					return err
				}
				return &exitError{harness.ExitFailed, err}
			}
			if failed > 0 {
				return &exitError{1, fmt.Errorf("%s failed", words.Plural(failed, "check"))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.ClientDir, "client", "", "the client directory (fencecheck-client.json and your program)")
	f.StringVar(&cfg.Backend, "backend", "", "the lock service: "+registry.OrList(registry.OpenToClients()))
	f.StringVar(&cfg.Storage, "storage", "", "the resource the client writes: the fenced storage node (default), or a storage it writes with its own fence check (postgres; etcd with --backend etcd)")
	f.DurationVar(&cfg.LeaseTTL, "lease-ttl", 2*time.Second, "the lease the client is told to use")
	f.IntVar(&cfg.Nodes, "nodes", 0, "lock servers (default: the backend's own count): "+registry.NodesUsage())
	f.StringVar(&cfg.AgentBinary, "agent-binary", "", "static check binary for the containers (default: $FENCECHECK_BINARY, else this one)")
	cmd.SetFlagErrorFunc(flagError)
	return cmd
}
