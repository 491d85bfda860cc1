package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/harness"
	"github.com/fencecheck/fencecheck/reports"
	"github.com/fencecheck/fencecheck/runstore"
)

func newServeCmd() *cobra.Command {
	var root, addr string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the store on localhost: an index of every run, newest first, and their reports",
		Long: `serve serves the store directory read-only on a loopback address: at / an index
of every run with its verdict, newest first, each linking to its report.html,
results.json, history.jsonl, linearizability.html and check.log. Only files
inside the store are served. Ctrl-C stops it.`,
		Example: `  check serve
  check serve --store /var/fencecheck/store --addr 127.0.0.1:9090`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usageErr("serve takes no arguments (use --store DIR), got %q", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serveStore(ctx, root, addr, cmd.OutOrStdout(), nil)
		},
	}
	cmd.Flags().StringVar(&root, "store", runstore.DefaultRoot, "the store directory to serve")
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "loopback address and port to listen on")
	cmd.SetFlagErrorFunc(flagError)
	return cmd
}

// serveStore serves store on addr until ctx ends. ready, if not nil, gets
// the base URL once the server listens.
func serveStore(ctx context.Context, store, addr string, out io.Writer, ready func(url string)) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErr("--addr: %v (want host:port, e.g. 127.0.0.1:8080)", err)
	}
	if !reports.IsLoopbackHost(host) {
		return usageErr("--addr: %s is not a loopback address; serve listens on localhost only (e.g. 127.0.0.1:8080)", host)
	}
	if st, err := os.Stat(store); err != nil || !st.IsDir() {
		return usageErr("--store: %s is not a directory", store)
	}
	h, err := reports.NewStoreServer(store)
	if err != nil {
		return usageErr("--store: %v", err)
	}
	defer h.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		// The address is the user's: one in use or not ours to take is
		// bad input, refused before anything is served.
		if errors.Is(err, syscall.EADDRINUSE) {
			return usageErr("--addr: %s is already in use by another program; pick a free port (e.g. --addr 127.0.0.1:0 takes any)", addr)
		}
		return usageErr("--addr: cannot listen on %s (%v); pick another address (e.g. --addr 127.0.0.1:8080)", addr, err)
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(out, "serving %s at %s (Ctrl-C to stop)\n", store, url)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	if ready != nil {
		ready(url)
	}
	select {
	case err := <-done:
		return &exitError{harness.ExitFailed, err}
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdown)
	if errors.Is(err, context.DeadlineExceeded) {
		// A browser still holding a request open after the grace
		// period: the user asked to stop, so stop.
		err = srv.Close()
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return &exitError{harness.ExitFailed, err}
	}
	return nil
}
