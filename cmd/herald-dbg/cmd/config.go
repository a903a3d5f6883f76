package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
)

func configCmd() *cobra.Command {
	var flagNames bool
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the agent's effective configuration (flags, ConfigMap and defaults combined)",
		RunE: func(cmd *cobra.Command, _ []string) error {
			values, err := fetchConfig(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 1, ' ', 0)
			for _, name := range agentconfig.SortedNames(values) {
				key := agentconfig.DisplayName(name)
				if flagNames {
					key = name
				}
				fmt.Fprintf(tw, "%s\t: %s\n", key, strings.TrimSpace(values[name]))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&flagNames, "flag-names", false, "Print flag / ConfigMap key names instead of CamelCase names")
	// cilium-dbg prints only the options it can change at run time unless
	// asked for --all; Herald's agent changes none at run time and prints
	// them all, so the flag is accepted for the commands written for it.
	cmd.Flags().BoolP("all", "a", false, "Print every option (what herald-dbg config prints anyway; accepted as cilium-dbg's)")
	return cmd
}

// agentNode is the node the agent runs on. The chart leaves node-name
// empty and passes the node in $NODE_NAME, which herald-dbg, run in the
// agent's Pod, sees too: resolve it as the agent does.
func agentNode(cfg map[string]string) string {
	return agentconfig.Config{NodeName: cfg["node-name"]}.Node()
}

// fetchConfig reads the agent's effective configuration, by flag name.
func fetchConfig(ctx context.Context) (map[string]string, error) {
	out, err := agentExec(ctx, "herald/config")
	if err != nil {
		return nil, fmt.Errorf("reading the configuration from the agent at %s: %w", socket, err)
	}
	var values map[string]string
	if err := json.Unmarshal(out, &values); err != nil {
		return nil, err
	}
	return values, nil
}
