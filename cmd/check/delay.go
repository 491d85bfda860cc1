package main

import (
	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/nemesis"
)

// newDelayCmd is the user-space packet delayer the latency fault runs in
// a node: the kernel here has no netem, so packets queued by iptables'
// NFQUEUE are held and released by this process.
func newDelayCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "delay",
		Short:              "Hold packets queued by the latency fault (runs in a node)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return nemesis.RunDelayer(args, cmd.ErrOrStderr())
		},
	}
}
