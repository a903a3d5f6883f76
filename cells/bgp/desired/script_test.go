package desired

import (
	"testing"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"k8s.io/client-go/tools/record"

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
			// The feature's switch, which cells/bgp registers.
			cell.Config(bgpconfig.Defaults),
			cell.Provide(func() record.EventRecorder { return record.NewFakeRecorder(100) }),
			// The node's default routes and devices, empty: the
			// scenarios' nodes have IPv4 addresses and their peers
			// addresses (derive_test.go covers the rest).
			cell.Provide(
				tables.NewBGPDefaultGatewaysTable, statedb.RWTable[*tables.BGPDefaultGateway].ToTable,
				tables.NewBGPLinkNeighborsTable, statedb.RWTable[*tables.BGPLinkNeighbor].ToTable,
				tables.NewDevicesTable, statedb.RWTable[*tables.Device].ToTable,
			),
		),
		Cell)
}
