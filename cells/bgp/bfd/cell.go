// Package bfd runs a BFD session (RFC 5880/5881, asynchronous mode) with
// every BGP peer whose CiliumBGPPeerConfig has spec.bfd, and publishes
// the sessions in the bgp-bfd table; the speaker resets a peer's BGP
// session when its BFD session fails, so that neither side waits for the
// hold time.
//
// Reads: table bgp-instances.
// Writes: table bgp-bfd; BFD control packets (UDP 3784).
package bfd

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"bgp-bfd",
	"Runs BFD sessions with the BGP peers that ask for them",

	cell.ProvidePrivate(tables.NewBGPBFDSessionsTable),
	cell.Provide(statedb.RWTable[*tables.BGPBFDSession].ToTable),
	cell.Invoke(registerBFD),
)
