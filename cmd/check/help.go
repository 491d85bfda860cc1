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
