package desired

import (
	"testing"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/scripthive"
)

// TestScript runs the scenarios in testdata/*.txtar: the BGP resources,
// Nodes, Services and EndpointSlices go in as manifests (k8s/apply,
// k8s/delete); the bgp-instances and bgp-routes tables come out (db/cmp,
// db/show). This agent is node1.
func TestScript(t *testing.T) {
	scripthive.Test(t, []string{"--enable-bgp-control-plane", "--node-name=node1"},
		cell.Group(
			scripthive.Kube(),
			cell.Module("bgp-fake", "What the BGP feature and multi-pool IPAM provide",
				// The feature's switch, which cells/bgp registers.
				cell.Config(bgpconfig.Defaults),
				// Multi-pool IPAM's tables, empty: its pools are
				// advertised only with ipam: multi-pool.
				cell.Provide(
					tables.NewPodIPPoolsTable, statedb.RWTable[*tables.PodIPPool].ToTable,
					tables.NewCiliumNodesTable, statedb.RWTable[*tables.CiliumNode].ToTable,
				),
			),
		),
		Cell)
}
