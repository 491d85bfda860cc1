package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/nemesis/lossyfs"
)

// newLossyfsCmd is the power faults' filesystem layer, run in a server
// node (nemesis/lossyfs): `serve` mounts it over the lock service's data
// directory, `drop` and `status` command it.
func newLossyfsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "lossyfs",
		Short:  "The filesystem layer that loses unsynced writes, for the power faults (runs in a node)",
		Hidden: true,
	}
	var socket string
	serve := &cobra.Command{
		Use:   "serve MOUNTPOINT DISK",
		Short: "Mount the layer at MOUNTPOINT over the directory DISK and serve it until SIGTERM",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return lossyfs.Serve(args[0], args[1], socket, cmd.ErrOrStderr())
		},
	}
	command := func(name, short string) *cobra.Command {
		return &cobra.Command{
			Use:   name,
			Short: short,
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				a, err := lossyfs.Command(socket, name)
				if err != nil {
					return err
				}
				b, _ := json.Marshal(a)
				fmt.Fprintln(cmd.OutOrStdout(), string(b))
				return nil
			},
		}
	}
	cmd.PersistentFlags().StringVar(&socket, "socket", lossyfs.Socket, "the layer's command socket")
	cmd.AddCommand(serve,
		command(lossyfs.CmdDrop, "Forget everything not synced: every file returns to its last synced content and size"),
		command(lossyfs.CmdStatus, "List the files with something not synced"))
	return cmd
}
