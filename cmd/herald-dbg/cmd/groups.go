package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
)

// strictGroups makes every command that only groups others (ipam, explain,
// bpf, pools, migrate) fail on a word that is none of its subcommands.
// Cobra checks unknown subcommands of the root only: `herald-dbg ipam
// chek` printed the help and exited 0, which a script reads as "no
// problems found".
func strictGroups(c *cobra.Command) {
	for _, sub := range c.Commands() {
		strictGroups(sub)
	}
	if !c.HasParent() || !c.HasSubCommands() || c.Runnable() {
		return
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return fmt.Errorf("unknown command %q for %q; run '%s --help' for its commands", args[0], cmd.CommandPath(), cmd.CommandPath())
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
}
