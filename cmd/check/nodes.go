package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/backends/fenced"
	"github.com/fencecheck/fencecheck/backends/memory"
	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/harness/agent"
)

// The commands below run inside the nodes; people rarely type them.

func newLockdCmd() *cobra.Command {
	var listen string
	var ttl time.Duration
	cmd := &cobra.Command{
		Use:     "lockd",
		Short:   "Serve the memory backend's lease service over HTTP (runs in a server node)",
		Example: "  check lockd --listen :7000 --lease-ttl 2s",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if ttl <= 0 {
				return usageErr("--lease-ttl must be positive, got %s", ttl)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "lockd: listening on %s, lease ttl %s\n", listen, ttl)
			return serve(listen, memory.Handler(memory.NewService(ttl)))
		},
	}
	cmd.Flags().StringVar(&listen, "listen", fmt.Sprintf(":%d", memory.LockdPort), "address to listen on")
	cmd.Flags().DurationVar(&ttl, "lease-ttl", 2*time.Second, "lease length")
	return cmd
}

func newStorageCmd() *cobra.Command {
	var listen, fencing string
	cmd := &cobra.Command{
		Use:     "storage",
		Short:   "Serve the fenced storage over HTTP (runs in the storage node)",
		Example: "  check storage --listen :7001 --fencing all",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mode, err := fenced.ParseMode(fencing)
			if err != nil {
				return usageErr("--fencing: %v", err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "storage: listening on %s, fencing %s\n", listen, mode)
			return serve(listen, fenced.Handler(fenced.NewStore(mode)))
		},
	}
	cmd.Flags().StringVar(&listen, "listen", fmt.Sprintf(":%d", fenced.Port), "address to listen on")
	cmd.Flags().StringVar(&fencing, "fencing", "all", "none, writes or all")
	return cmd
}

func serve(addr string, h http.Handler) error {
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if err := srv.ListenAndServe(); err != nil {
		return &exitError{harness.ExitFailed, err}
	}
	return nil
}

func newAgentCmd() *cobra.Command {
	var specJSON string
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run one client process, driven by JSON lines on stdin (runs in a client node)",
		Long: `agent opens one client of a lock service and its storage and executes the ops
the harness sends on stdin, one JSON object per line, answering each on stdout:
the client protocol of docs/client-protocol.md (package lockclient). The harness
starts it through docker exec. Its recipe and settings come in the init line's
"builtin" field (a backends.ClientSpec), or --spec; that keeps any secret in them
(a database password) off the command line, where ps would show it.`,
		Example: `  docker exec -i fc-<test>-c1 check agent < ops.jsonl   # the harness does this`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			open := agent.SpecOpener(specJSON, registry.OpenClient)
			if err := agent.Serve(os.Stdin, os.Stdout, open); err != nil {
				return &exitError{harness.ExitFailed, err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&specJSON, "spec", "", "the client's spec as JSON (backends.ClientSpec), in place of the init line's builtin field")
	return cmd
}

func newProbeCmd() *cobra.Command {
	var (
		timeout   time.Duration
		caFile    string
		printBody bool
	)
	cmd := &cobra.Command{
		Use:    "probe URL",
		Short:  "Exit 0 when GET URL answers 200 (a readiness check run inside nodes)",
		Args:   cobra.ExactArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			hc := http.Client{Timeout: max(timeout, time.Second)}
			if caFile != "" {
				pem, err := os.ReadFile(caFile)
				if err != nil {
					return &exitError{1, err}
				}
				pool := x509.NewCertPool()
				if !pool.AppendCertsFromPEM(pem) {
					return &exitError{1, fmt.Errorf("--ca %s holds no PEM certificate", caFile)}
				}
				hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
			}
			resp, err := hc.Get(args[0])
			if err != nil {
				return &exitError{1, err}
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return &exitError{1, fmt.Errorf("%s answered %s", args[0], resp.Status)}
			}
			if printBody {
				if _, err := io.Copy(cmd.OutOrStdout(), io.LimitReader(resp.Body, 1<<20)); err != nil {
					return &exitError{1, err}
				}
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", time.Second, "how long to wait for the answer")
	cmd.Flags().StringVar(&caFile, "ca", "", "trust only the PEM certificate(s) in this file for an https URL (a server's self-signed certificate)")
	cmd.Flags().BoolVar(&printBody, "print", false, "write the answer's body to stdout")
	return cmd
}
