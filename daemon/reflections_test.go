package daemon

import (
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/tables"
)

// Each feature asks for the Kubernetes objects it reads, and only while it
// is on: the agent watches exactly these, whatever else is installed.
func TestReflectionsPerFeature(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unusedKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	lbipam := []string{tables.LBPoolsTableName, tables.ServicesTableName}
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string
	}{
		{name: "LB IPAM alone", want: lbipam},
		{name: "L2 announcements", flags: []string{"--enable-l2-announcements"},
			want: append(slices.Clone(lbipam), tables.EndpointSlicesTableName, tables.L2LeasesTableName+" in kube-system", tables.L2PoliciesTableName, tables.NodesTableName)},
		{name: "L2 announcements, Lease election", flags: []string{"--enable-l2-announcements", "--l2-announcements-election=lease"},
			want: append(slices.Clone(lbipam), tables.EndpointSlicesTableName, tables.L2LeasesTableName+" in kube-system", tables.L2PoliciesTableName, tables.NodesTableName)},
		{name: "multi-pool IPAM", flags: []string{"--ipam=multi-pool"},
			want: append(slices.Clone(lbipam), tables.CiliumNodesTableName, tables.NamespacesTableName, tables.NodesTableName, tables.PodIPPoolsTableName, tables.PodsTableName)},
		{name: "BGP", flags: []string{"--enable-bgp-control-plane", "--bgp-secrets-namespace=bgp"},
			want: append(slices.Clone(lbipam), tables.BGPAdvertisementsTableName, tables.BGPClusterConfigsTableName, tables.BGPNodeOverridesTableName,
				tables.BGPNodeConfigsTableName, tables.BGPNodeOwnersTableName, tables.BGPPeerConfigsTableName, tables.BGPSecretsTableName+" in bgp", tables.EndpointSlicesTableName, tables.NodesTableName)},
		{name: "BGP with multi-pool IPAM", flags: []string{"--enable-bgp-control-plane", "--ipam=multi-pool"},
			want: append(slices.Clone(lbipam), tables.BGPAdvertisementsTableName, tables.BGPClusterConfigsTableName, tables.BGPNodeOverridesTableName,
				tables.BGPNodeConfigsTableName, tables.BGPNodeOwnersTableName, tables.BGPPeerConfigsTableName, tables.BGPSecretsTableName+" in kube-system", tables.CiliumNodesTableName,
				tables.EndpointSlicesTableName, tables.NamespacesTableName, tables.NodesTableName, tables.PodIPPoolsTableName, tables.PodsTableName)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]bool{}
			h := New(cell.Invoke(func(in struct {
				cell.In
				Requests []tables.Reflection `group:"reflections"`
			}) {
				for _, r := range in.Requests {
					name := r.Table
					if r.Namespace != "" {
						name += " in " + r.Namespace
					}
					got[name] = true
				}
			}))
			flags := pflag.NewFlagSet("", pflag.ContinueOnError)
			h.RegisterFlags(flags)
			// Populate builds the clients and never connects.
			if err := flags.Parse(append([]string{"--node-name=node1", "--kubeconfig=" + kubeconfig}, tc.flags...)); err != nil {
				t.Fatal(err)
			}
			if err := h.Populate(slog.New(slog.DiscardHandler)); err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, want) {
				t.Errorf("reflected %v\nwant      %v", names, want)
			}
		})
	}
}

const unusedKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: unused}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
