// Package gateways keeps what the node's routing says about its BGP peers:
// the table bgp-default-gateways equal to the node's default routes, one
// per address family (the peers a CiliumBGPClusterConfig finds by
// autoDiscovery mode DefaultGateway are their gateways, and follow them
// when the routes change), and bgp-link-neighbors equal to the IPv6
// link-local neighbours of the interfaces BGP unnumbered peers can be on
// (such a peer is the one router of its interface).
//
// Reads: netlink (routes of the main table, IPv6 neighbours; a dump, then
// updates); table bgp-cluster-configs (the interfaces of unnumbered peers).
// Writes: tables bgp-default-gateways, bgp-link-neighbors.
//
// Runs while the BGP control plane is on.
package gateways

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"bgp-gateways",
	"Default routes of the node for peer auto-discovery",

	cell.Provide(reflections),
	cell.ProvidePrivate(tables.NewBGPDefaultGatewaysTable),
	cell.Provide(statedb.RWTable[*tables.BGPDefaultGateway].ToTable),
	cell.ProvidePrivate(tables.NewBGPLinkNeighborsTable),
	cell.Provide(statedb.RWTable[*tables.BGPLinkNeighbor].ToTable),
	cell.Invoke(registerWatcher),
)

// reflections asks the ground floor for the Kubernetes objects this cell
// reads: the cluster configs, whose unnumbered peers name interfaces.
func reflections(bgp bgpconfig.Config) tables.Reflections {
	if !bgp.EnableBGPControlPlane {
		return tables.Reflections{}
	}
	return tables.Reflect(tables.BGPClusterConfigsTableName)
}
