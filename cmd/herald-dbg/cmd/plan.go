package cmd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/cells/lbipam/allocator"
	"github.com/heraldlb/herald/tables"
)

func poolsCmd() *cobra.Command {
	pools := &cobra.Command{Use: "pools", Short: "LB IPAM pools"}
	var files, deletes []string
	plan := &cobra.Command{
		Use:   "plan -f POOL.yaml [--delete NAME]",
		Short: "Which Services would gain, keep, move or lose IPs if these pools were applied; nothing is written",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 && len(deletes) == 0 {
				return fmt.Errorf("give the edited pools with -f, or pools to delete with --delete")
			}
			var apply []*tables.LBPool
			for _, f := range files {
				ps, err := readPools(f, cmd.InOrStdin())
				if err != nil {
					return err
				}
				apply = append(apply, ps...)
			}
			snap, err := fetchSnapshot(cmd.Context())
			if err != nil {
				return err
			}
			changes := allocator.Plan(snap.families(), snap.responsibility(), snap.pools, snap.services, apply, deletes)
			if len(changes) == 0 {
				fmt.Println("No Service would change.")
				return nil
			}
			tw := tabwriter.NewWriter(os.Stdout, 0, 0, 3, ' ', 0)
			fmt.Fprintln(tw, "SERVICE\tCHANGE\tNOW\tAFTER\tWHY")
			for _, c := range changes {
				why := c.Released
				if c.Reason != "" {
					why = strings.TrimPrefix(why+"; "+c.Reason, "; ")
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Service, c.Verdict, dashIfEmpty(strings.Join(c.Before, ",")), dashIfEmpty(strings.Join(c.After, ",")), dashIfEmpty(why))
			}
			return tw.Flush()
		},
	}
	plan.Flags().StringSliceVarP(&files, "filename", "f", nil, "YAML file(s) with CiliumLoadBalancerIPPool objects as they would be applied (\"-\" is stdin)")
	plan.Flags().StringSliceVar(&deletes, "delete", nil, "Names of pools that would be deleted")
	pools.AddCommand(plan)
	return pools
}

// readPools parses every CiliumLoadBalancerIPPool of a multi-document file;
// "-" is stdin, so that `kubectl exec -i ds/herald -- herald-dbg pools plan
// -f - < pool.yaml` plans a file that is not in the agent's Pod.
func readPools(path string, stdin io.Reader) ([]*tables.LBPool, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*tables.LBPool
	for {
		var p v2alpha1.CiliumLoadBalancerIPPool
		if err := dec.Decode(&p); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if p.Kind == "" && p.Name == "" {
			continue
		}
		if p.Kind != "CiliumLoadBalancerIPPool" {
			return nil, fmt.Errorf("%s: %s %q is not a CiliumLoadBalancerIPPool", path, p.Kind, p.Name)
		}
		if p.Spec.AllowFirstLastIPs == "" {
			p.Spec.AllowFirstLastIPs = v2alpha1.AllowFirstLastIPYes // the API server's default
		}
		row := tables.LBPoolFromK8s(&p)
		problems := row.BlockErrors
		if row.SelectorError != "" {
			problems = append(problems, row.SelectorError)
		}
		if len(problems) > 0 {
			return nil, fmt.Errorf("%s: pool %s would be rejected: %s", path, p.Name, strings.Join(problems, "; "))
		}
		out = append(out, row)
	}
	return out, nil
}

func dashIfEmpty(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
