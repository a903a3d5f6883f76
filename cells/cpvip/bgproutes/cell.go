// Package bgproutes advertises the control-plane VIPs over BGP too, when
// bgp-local-asn is set: the owner's VIPs (its l2-announce entries, not
// withdrawn) become bgp-routes to every router of bgp-peers, which the
// BGP feature's speaker (GoBGP) sends. Withdrawn with the L2 entries, so
// a release withdraws the routes too; a frozen or cut-off owner's routes
// stay at the routers until its sessions' hold time runs out, or, with
// bgp-bfd-interval, until BFD finds it gone (the BGP feature's bfd cell).
//
// Reads: table l2-announce.
// Writes: tables bgp-instances (once), bgp-routes.
package bgproutes

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"control-plane-bgp",
	"Advertises the owned control-plane VIPs over BGP",

	cell.ProvidePrivate(tables.NewBGPInstancesTable, tables.NewBGPRoutesTable),
	cell.Provide(
		statedb.RWTable[*tables.BGPInstance].ToTable,
		statedb.RWTable[*tables.BGPRoute].ToTable,
	),
	cell.Invoke(register),
)
