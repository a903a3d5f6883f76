package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/cilium/statedb"
	"github.com/spf13/cobra"

	"github.com/heraldlb/herald/tables"
)

// tablePrinter fetches one table from the agent and prints it.
type tablePrinter func(ctx context.Context, out io.Writer, asJSON bool) error

// printers lists the tables herald-dbg knows how to decode.
var printers = map[string]tablePrinter{
	tables.ServicesTableName:      printTable[*tables.Service](tables.ServicesTableName),
	tables.LBPoolsTableName:       printTable[*tables.LBPool](tables.LBPoolsTableName),
	tables.LBAllocationsTableName: printTable[*tables.LBAllocation](tables.LBAllocationsTableName),
	tables.LBPoolStatusTableName:  printTable[*tables.LBPoolStatus](tables.LBPoolStatusTableName),
	tables.DevicesTableName:       printTable[*tables.Device](tables.DevicesTableName),
	tables.L2PoliciesTableName:    printTable[*tables.L2Policy](tables.L2PoliciesTableName),
	tables.L2AnnounceTableName:    printTable[*tables.L2AnnounceEntry](tables.L2AnnounceTableName),
	tables.NodesTableName:         printTable[*tables.Node](tables.NodesTableName),
	tables.L2LeaseHealthTableName: printTable[*tables.L2LeaseHealth](tables.L2LeaseHealthTableName),
	tables.LeadershipTableName:    printTable[*tables.Leadership](tables.LeadershipTableName),
	// L2 election: candidates, members, who answers for what and why.
	tables.L2CandidatesTableName:   printTable[*tables.L2Candidate](tables.L2CandidatesTableName),
	tables.L2MembersTableName:      printTable[*tables.L2Member](tables.L2MembersTableName),
	tables.L2OwnersTableName:       printTable[*tables.L2Owner](tables.L2OwnersTableName),
	tables.L2LeasesTableName:       printTable[*tables.L2Lease](tables.L2LeasesTableName),
	tables.L2PolicyStatusTableName: printTable[*tables.L2PolicyStatus](tables.L2PolicyStatusTableName),

	// Between the members election's two cells.
	tables.L2MemberConfirmationTableName: printTable[*tables.L2MemberConfirmation](tables.L2MemberConfirmationTableName),
	tables.L2MemberMetaTableName:         printTable[*tables.L2MemberMeta](tables.L2MemberMetaTableName),
	// Multi-pool IPAM.
	tables.PodIPPoolsTableName:       printTable[*tables.PodIPPool](tables.PodIPPoolsTableName),
	tables.CiliumNodesTableName:      printTable[*tables.CiliumNode](tables.CiliumNodesTableName),
	tables.PodCIDRDecisionsTableName: printTable[*tables.PodCIDRDecision](tables.PodCIDRDecisionsTableName),
	tables.PodIPPoolStatusTableName:  printTable[*tables.PodIPPoolStatus](tables.PodIPPoolStatusTableName),
	tables.NodePodCIDRsTableName:     printTable[*tables.NodePodCIDR](tables.NodePodCIDRsTableName),
	tables.PodIPAllocationsTableName: printTable[*tables.PodIPAllocation](tables.PodIPAllocationsTableName),
	tables.PodsTableName:             printTable[*tables.Pod](tables.PodsTableName),
	tables.NamespacesTableName:       printTable[*tables.Namespace](tables.NamespacesTableName),
	tables.NodeRoutesTableName:       printTable[*tables.NodeRoute](tables.NodeRoutesTableName),
	// BGP: the resources as reflected, what this node runs and
	// advertises (and why), its sessions.
	tables.BGPClusterConfigsTableName: printTable[*tables.BGPClusterConfig](tables.BGPClusterConfigsTableName),
	tables.BGPPeerConfigsTableName:    printTable[*tables.BGPPeerConfig](tables.BGPPeerConfigsTableName),
	tables.BGPAdvertisementsTableName: printTable[*tables.BGPAdvertisement](tables.BGPAdvertisementsTableName),
	tables.BGPNodeOverridesTableName:  printTable[*tables.BGPNodeOverride](tables.BGPNodeOverridesTableName),
	tables.BGPSecretsTableName:        printTable[*tables.BGPSecret](tables.BGPSecretsTableName),
	tables.BGPNodeConfigsTableName:    printTable[*tables.BGPNodeConfig](tables.BGPNodeConfigsTableName),
	tables.BGPInstancesTableName:      printTable[*tables.BGPInstance](tables.BGPInstancesTableName),
	tables.BGPRoutesTableName:         printTable[*tables.BGPRoute](tables.BGPRoutesTableName),
	tables.BGPPeersTableName:          printTable[*tables.BGPPeerState](tables.BGPPeersTableName),
	tables.BGPResourceStatusTableName: printTable[*tables.BGPResourceStatus](tables.BGPResourceStatusTableName),
	tables.BGPNodeStatusTableName:     printTable[*tables.BGPNodeStatus](tables.BGPNodeStatusTableName),
}

type row interface {
	TableHeader() []string
	TableRow() []string
}

// fetchTable reads a whole table from the agent.
func fetchTable[Obj any](ctx context.Context, name string) ([]Obj, error) {
	remote := statedb.NewRemoteTable[Obj](agentURL, name)
	remote.SetTransport(agentTransport())
	objs, errs := remote.LowerBound(ctx, statedb.ByRevision[Obj](0))
	var all []Obj
	for obj := range objs {
		all = append(all, obj)
	}
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("reading table %s from the agent at %s: %w", name, socket, err)
	}
	return all, nil
}

func printTable[Obj row](name string) tablePrinter {
	return func(ctx context.Context, out io.Writer, asJSON bool) error {
		all, err := fetchTable[Obj](ctx, name)
		if err != nil {
			return err
		}
		if asJSON {
			enc := json.NewEncoder(out)
			enc.SetIndent("", "  ")
			if all == nil {
				all = []Obj{}
			}
			return enc.Encode(all)
		}
		rows := make([][]string, 0, len(all))
		for _, o := range all {
			rows = append(rows, o.TableRow())
		}
		// Stable, readable order: by the first column.
		slices.SortStableFunc(rows, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
		var zero Obj
		header := zeroHeader(zero)
		tw := tabwriter.NewWriter(out, 4, 0, 3, ' ', 0)
		fmt.Fprintln(tw, "# "+strings.Join(header, "\t"))
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t"))
		}
		return tw.Flush()
	}
}

// zeroHeader returns the header of a table from a nil object pointer; the
// TableHeader methods do not touch their receiver.
func zeroHeader[Obj row](zero Obj) []string { return zero.TableHeader() }

func statedbCmd() *cobra.Command {
	var output string
	names := make([]string, 0, len(printers))
	for n := range printers {
		names = append(names, n)
	}
	slices.Sort(names)
	cmd := &cobra.Command{
		Use:       "statedb TABLE",
		Short:     "Print one of the agent's tables: " + strings.Join(names, ", "),
		Args:      cobra.ExactArgs(1),
		ValidArgs: names,
		RunE: func(cmd *cobra.Command, args []string) error {
			p, ok := printers[args[0]]
			if !ok {
				return fmt.Errorf("unknown table %q; known tables: %s", args[0], strings.Join(names, ", "))
			}
			if output != "" && output != "json" && output != "table" {
				return fmt.Errorf("-o %q: use table or json", output)
			}
			return p(cmd.Context(), os.Stdout, output == "json")
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "Output format: table or json")
	return cmd
}
