package cmd

import (
	"fmt"
	"io"

	"github.com/cilium/hive/shell"
	"github.com/spf13/cobra"

	"github.com/heraldlb/herald/cells/ground/dbgshell"
)

// shellCmd is hive's shell client on the agent's socket: statedb's commands
// (db/show, db/cmp, ...) and Herald's (herald/table, herald/config), typed
// at a prompt or given after --.
func shellCmd() *cobra.Command {
	cmd := shell.ShellCmd(dbgshell.DefaultSocket, "herald> ", func(w io.Writer) {
		fmt.Fprintf(w, "The shell of the herald-agent at %s: 'help' lists the commands, 'exit' leaves.\n", socket)
	})
	cmd.Use = "shell [-- COMMAND ARGS...]"
	cmd.Short = "Run the agent's shell commands (db/show TABLE, db/cmp, herald/table, ...): interactively, or one after --"
	// hive's client has its own socket flag: herald-dbg's is --socket.
	_ = cmd.Flags().MarkHidden(shell.ShellSockPathName)
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed(shell.ShellSockPathName) {
			return nil
		}
		return cmd.Flags().Set(shell.ShellSockPathName, socket)
	}
	return cmd
}
