package daemon

import (
	"context"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"

	"github.com/heraldlb/herald/tables"
)

// Each feature asks for the Kubernetes objects it reads, and only while it
// is on: the agent watches exactly these, whatever else is installed. Every
// kind the agent defines is watched in one of the cases: a new feature's
// kind fails here until a case with the feature on pins what it watches.
func TestReflectionsPerFeature(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unusedKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	lbipam := []string{tables.LBPoolsTableName, tables.ServicesTableName}
	defined, pinned := map[string]bool{}, map[string]bool{}
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
		for _, name := range tc.want {
			table, _, _ := strings.Cut(name, " in ")
			pinned[table] = true
		}
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
			// The kinds defined are those reflected and those no cell
			// asked for, as the ground floor logs them.
			log := slog.New(&reflectingLog{seen: defined})
			if err := h.Populate(log); err != nil {
				t.Fatal(err)
			}
			want := slices.Clone(tc.want)
			slices.Sort(want)
			if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, want) {
				t.Errorf("reflected %v\nwant      %v", names, want)
			}
		})
	}
	if len(defined) == 0 {
		t.Fatal(`the ground floor logged no "Reflecting Kubernetes objects"`)
	}
	for _, table := range slices.Sorted(maps.Keys(defined)) {
		if !pinned[table] {
			t.Errorf("table %s holds a Kubernetes kind no case here watches: add a case with its feature on", table)
		}
	}
}

// reflectingLog records the tables of the ground floor's "Reflecting
// Kubernetes objects" line, reflected or not.
type reflectingLog struct {
	seen map[string]bool
}

func (*reflectingLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *reflectingLog) WithAttrs([]slog.Attr) slog.Handler     { return l }
func (l *reflectingLog) WithGroup(string) slog.Handler          { return l }

func (l *reflectingLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "Reflecting Kubernetes objects" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "tables" || a.Key == "unasked" {
			if names, ok := a.Value.Any().([]string); ok {
				for _, n := range names {
					l.seen[n] = true
				}
			}
		}
		return true
	})
	return nil
}

const unusedKubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: unused}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`
