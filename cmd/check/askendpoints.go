package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/backends/registry"
	"github.com/fencecheck/fencecheck/harness"
)

// newAskEndpointsCmd is the question a run with --endpoints puts to the
// user's servers, asked inside a client container (where the endpoints
// are reachable, on the network the user named): what each server is and
// the addresses its host resolves to there, or, with --state, what every
// member holds at the end of the run. It prints JSON for the harness.
func newAskEndpointsCmd() *cobra.Command {
	var backend string
	var state bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:    "ask-endpoints ENDPOINT...",
		Short:  "Ask a lock service's servers, by address, what they are (runs in a client node)",
		Args:   cobra.MinimumNArgs(1),
		Hidden: true,
		RunE: func(cmd *cobra.Command, endpoints []string) error {
			b, ok := registry.LookupByAddress(backend)
			if !ok {
				return usageErr("--backend: %s cannot be asked by address (accepted: %v)", backend, registry.ByAddressNames())
			}
			ctx, cancel := context.WithTimeout(context.Background(), max(timeout, time.Second))
			defer cancel()
			var out any
			if state {
				if b.State == nil {
					return usageErr("--state: %s has no question of its members' state by address", backend)
				}
				st, err := b.State(ctx, endpoints)
				if err != nil {
					return &exitError{harness.ExitFailed, err}
				}
				out = st
			} else {
				out = askEndpoints(ctx, b, endpoints)
			}
			return json.NewEncoder(cmd.OutOrStdout()).Encode(out)
		},
	}
	cmd.Flags().StringVar(&backend, "backend", "", "the lock service: "+fmt.Sprint(registry.ByAddressNames()))
	cmd.Flags().BoolVar(&state, "state", false, "ask what every member holds (the end of a run's question) instead of what each server is")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Second, "how long the question may take")
	return cmd
}

// askEndpoints resolves each endpoint's host and asks its server what it
// is, all at once.
func askEndpoints(ctx context.Context, b registry.ByAddress, endpoints []string) []registry.EndpointAnswer {
	out := make([]registry.EndpointAnswer, len(endpoints))
	var wg sync.WaitGroup
	for i, e := range endpoints {
		wg.Go(func() {
			a := registry.EndpointAnswer{Endpoint: e}
			defer func() { out[i] = a }()
			host, _, err := b.Parse(e)
			if err != nil {
				a.Error = err.Error()
				return
			}
			ips, err := net.DefaultResolver.LookupHost(ctx, host)
			if err != nil {
				a.Error = fmt.Sprintf("%s: the host %s does not resolve here: %v", e, host, err)
				return
			}
			a.IPs = ips
			v, err := b.Version(ctx, e)
			if err != nil {
				a.Error = err.Error()
				return
			}
			a.Version, a.Answer = v.Version, v.Answer
		})
	}
	wg.Wait()
	return out
}
