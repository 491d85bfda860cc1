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
	var keep string
	options := map[string]*string{} // the backends' own flags (--apiservers, …)
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
there. A passing test leaves nothing behind unless --store DIR keeps it: the
client's stderr and the servers' logs in DIR/logs, every line exchanged (the
tokens in them, secrets elided) in DIR/exchange.log. Exit 0 when every check
passed, 1 when one failed.`,
		Example: "  check client-test --client examples/clients/kazoo --backend zookeeper\n  check client-test --client examples/clients/kazoo --backend zookeeper --store kazoo-test\n  check client-test --client examples/clients/client-go --backend kubernetes --apiservers 3\n  check client-test --client examples/clients/pg-kazoo --backend zookeeper --storage postgres\n  check client-test --client examples/clients/redsync --backend redis --nodes 5",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.ClientDir == "" {
				return usageErr("--client: name the client directory (the one that holds fencecheck-client.json)")
			}
			if !cmd.Flags().Changed("backend") {
				return usageErr("--backend: name the lock service your client speaks to: %s", registry.OrList(registry.OpenToClients()))
			}
			cfg.Given = map[string]bool{"nodes": cmd.Flags().Changed("nodes")}
			cfg.Options = map[string]string{}
			for flag, v := range options {
				cfg.Options[flag] = *v
			}
			if cmd.Flags().Changed("store") && keep == "" {
				return usageErr("--store: name the directory to keep the test in (e.g. --store kazoo-test)")
			}
			sig, stop := signals()
			defer stop()
			failed, err := harness.ClientTest(sig.Stop, cfg, keep, cmd.OutOrStdout())
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
	f.StringVar(&keep, "store", "", "keep what the test did in this directory, passed or not (logs/: the client's stderr and the servers' logs; exchange.log: every line exchanged); a new or empty directory (default: nothing kept when every check passes)")
	// Each backend's own flags (e.g. --apiservers), as it describes them;
	// the one the backend does not own is refused with its owner's name.
	for _, o := range registry.Flags() {
		options[o.Name] = f.String(o.Name, "", o.Usage)
	}
	f.StringVar(&cfg.AgentBinary, "agent-binary", "", "static check binary for the containers (default: $FENCECHECK_BINARY, else this one)")
	cmd.SetFlagErrorFunc(flagError)
	return cmd
}
