package main

import (
	"encoding/json"
	"fmt"
	"strings"

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
	var opts lossyfs.Options
	serve := &cobra.Command{
		Use:   "serve MOUNTPOINT DISK",
		Short: "Mount the layer at MOUNTPOINT over the directory DISK and serve it until SIGTERM",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return lossyfs.Serve(args[0], args[1], socket, opts, cmd.ErrOrStderr())
		},
	}
	serve.Flags().BoolVar(&opts.LoseNames, "lose-names", false, "journal creates, renames and unlinks until an fsync of their directory; a cut undoes the rest")
	serve.Flags().BoolVar(&opts.KeepWrites, "keep-writes", false, "keep every file's writes since its last sync, so a cut may keep some of them (torn=)")
	command := func(name, short string) *cobra.Command {
		return &cobra.Command{
			Use:   name + " [KEY=VALUE...]",
			Short: short,
			Args:  cobra.ArbitraryArgs,
			RunE: func(cmd *cobra.Command, args []string) error {
				a, err := lossyfs.Command(socket, strings.Join(append([]string{name}, args...), " "))
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
		command(lossyfs.CmdStatus, "List the files with something not synced"),
		command(lossyfs.CmdArm, "Arm a trigger: at=UNIXNANO, or sync=GLOB n=N timing=before|after; the layer cuts the power by itself when it comes"),
		command(lossyfs.CmdDisarm, "Forget an armed trigger that has not fired"),
		command(lossyfs.CmdWait, "Wait (timeout=DURATION) for the armed trigger's cut"),
		command(lossyfs.CmdCut, "Cut the power now (unless a trigger did): kill every process holding a file under the mount, drop what was never synced (torn=, seed=)"))
	return cmd
}
