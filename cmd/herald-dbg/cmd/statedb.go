package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// fetchTable reads a whole table from the agent, in the order its objects
// were last written.
func fetchTable[Obj any](ctx context.Context, name string) ([]Obj, error) {
	out, err := agentExec(ctx, "herald/table", "--output=json", name)
	if err != nil {
		return nil, fmt.Errorf("reading table %s from the agent at %s: %w", name, socket, err)
	}
	var all []Obj
	if err := json.Unmarshal(out, &all); err != nil {
		return nil, fmt.Errorf("reading table %s from the agent at %s: %w", name, socket, err)
	}
	return all, nil
}

// tableNames asks the agent for the names of its tables.
func tableNames(ctx context.Context) ([]string, error) {
	out, err := agentExec(ctx, "herald/tables")
	if err != nil {
		return nil, fmt.Errorf("reading the tables' names from the agent at %s: %w", socket, err)
	}
	return strings.Fields(string(out)), nil
}

func statedbCmd() *cobra.Command {
	var output string
	var list bool
	cmd := &cobra.Command{
		Use:   "statedb TABLE",
		Short: "Print one of the agent's tables (herald-dbg statedb --list names them)",
		Args: func(cmd *cobra.Command, args []string) error {
			if list {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			names, err := tableNames(cmd.Context())
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if list {
				names, err := tableNames(cmd.Context())
				if err != nil {
					return err
				}
				for _, n := range names {
					fmt.Fprintln(cmd.OutOrStdout(), n)
				}
				return nil
			}
			if output != "" && output != "json" && output != "table" {
				return fmt.Errorf("-o %q: use table or json", output)
			}
			format := "table"
			if output == "json" {
				format = "json"
			}
			// The agent prints any of its tables, from the objects' own
			// TableHeader and TableRow, or as JSON.
			out, err := agentExec(cmd.Context(), "herald/table", "--output="+format, args[0])
			var remote remoteError
			if err != nil && !errors.As(err, &remote) {
				return fmt.Errorf("reading table %s from the agent at %s: %w", args[0], socket, err)
			}
			if err != nil {
				return err // the agent's: an unknown table, say
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "Output format: table or json")
	cmd.Flags().BoolVar(&list, "list", false, "Print the names of the agent's tables")
	return cmd
}
