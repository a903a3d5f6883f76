package tables

import (
	"fmt"
	"net/netip"

	"github.com/cilium/statedb"
)

// BGPDefaultGatewaysTableName is the table of the node's default routes,
// one per address family: the peers of CiliumBGPClusterConfigs with
// autoDiscovery mode DefaultGateway are their gateways.
const BGPDefaultGatewaysTableName = "bgp-default-gateways"

// BGPDefaultGateway is the default route of one address family in the
// main routing table, the one with the lowest metric.
type BGPDefaultGateway struct {
	// Family is "ipv4" or "ipv6" (Cilium's addressFamily values).
	Family  string     `json:"family"`
	Gateway netip.Addr `json:"gateway"` // a link-local gateway carries its device as zone
	Device  string     `json:"device"`
	Metric  int        `json:"metric"`
}

func (g *BGPDefaultGateway) TableHeader() []string {
	return []string{"Family", "Gateway", "Device", "Metric"}
}

func (g *BGPDefaultGateway) TableRow() []string {
	return []string{g.Family, g.Gateway.String(), g.Device, fmt.Sprint(g.Metric)}
}

// BGPDefaultGatewayFamilyIndex is the primary index of
// bgp-default-gateways.
var BGPDefaultGatewayFamilyIndex = nameIndex(func(g *BGPDefaultGateway) string { return g.Family })

// NewBGPDefaultGatewaysTable creates the bgp-default-gateways table.
func NewBGPDefaultGatewaysTable(db *statedb.DB) (statedb.RWTable[*BGPDefaultGateway], error) {
	return statedb.NewTable(db, BGPDefaultGatewaysTableName, BGPDefaultGatewayFamilyIndex)
}
