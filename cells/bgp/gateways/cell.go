// Package gateways keeps the table bgp-default-gateways equal to the
// node's default routes, one per address family: the peers a
// CiliumBGPClusterConfig finds by autoDiscovery (mode DefaultGateway) are
// their gateways, and follow them when the routes change.
//
// Reads: netlink (routes of the main table; a dump, then updates).
// Writes: table bgp-default-gateways.
//
// Runs while the BGP control plane is on.
package gateways

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"bgp-gateways",
	"Default routes of the node for peer auto-discovery",

	cell.ProvidePrivate(tables.NewBGPDefaultGatewaysTable),
	cell.Provide(statedb.RWTable[*tables.BGPDefaultGateway].ToTable),
	cell.Invoke(registerWatcher),
)
