// Package speaker runs this node's BGP instances with GoBGP embedded:
// one GoBGP server per instance, its neighbors the instance's peers, its
// RIB and export policy the bgp-routes table, and the sessions' state in
// the bgp-peers table. It follows bgp-routes through its changes, so a
// Service created or deleted costs one prefix's worth of work whatever the
// number of routes.
//
// Reads: tables bgp-instances, bgp-routes, bgp-bfd, devices (the IPv6
// next hop of IPv6 routes to IPv4 peers) and the kernel route to such a
// peer.
// Writes: table bgp-peers; BGP sessions.
package speaker

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"bgp-speaker",
	"Runs the BGP instances with GoBGP and advertises bgp-routes",

	cell.ProvidePrivate(tables.NewBGPPeersTable),
	cell.Provide(statedb.RWTable[*tables.BGPPeerState].ToTable),
	cell.Invoke(registerSpeaker),
)
