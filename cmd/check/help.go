package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/fencecheck/fencecheck/internal/words"
)

// newHelpCmd is `check help [command]`. Cobra's own prints the main help
// and exits 0 for a command that does not exist, so a typo looks like an
// answer; this one refuses it (254) and lists the commands there are.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "help shows the help of a command: check help analyze is check analyze --help.",
		RunE: func(c *cobra.Command, args []string) error {
			target, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 || target == nil {
				parent, missing := c.Root(), args
				if target != nil && len(rest) > 0 {
					parent, missing = target, rest
				}
				return usageErr("help: %s has no command %q (commands: %s)", parent.CommandPath(), strings.Join(missing, " "), words.List(commandNames(parent)))
			}
			return target.Help()
		},
	}
}

// commandNames lists the commands under c that a user types (not the
// hidden ones, nor help itself).
func commandNames(c *cobra.Command) []string {
	var out []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() && sub.Name() != "help" {
			out = append(out, sub.Name())
		}
	}
	return out
}

// refuseUnknownSubcommands makes every command that only groups others
// (check image, check cluster) refuse a word that is none of them, as the
// main command does: cobra would print the group's help and exit 0.
func refuseUnknownSubcommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = cobra.ArbitraryArgs
	c.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		path := strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
		return usageErr("%s: no command %q (commands: %s)", path, args[0], words.List(commandNames(c)))
	}
}
