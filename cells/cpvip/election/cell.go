// Package election elects the owner of the control-plane VIPs among the
// control-plane nodes, without the API server, and makes this node answer
// for them while it owns them.
//
// The rules (protocol.go) are a quorum lease: a node answers only until
// the fence window after it sent a request a majority granted, and a
// voter grants a second node only a window after its last grant to the
// first. The window bounds how long a frozen or cut-off owner answers;
// its eBPF responder enforces it (the l2-lease-health deadline), also
// while the agent cannot run.
//
// Reads: tables control-plane-readiness (this node's eligibility),
// devices (where each VIP is answered); the peers' beats and grants
// (memberlist packets on peer-port, encrypted with the peer secret).
// Writes: tables l2-announce and l2-lease-health (for the responder),
// control-plane-members and control-plane-vip (for herald-dbg); the VIPs'
// local routes; arp_ignore of the VIPs' IPv4 devices.
package election

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"control-plane-election",
	"Elects the owner of the control-plane VIPs",

	cell.ProvidePrivate(tables.NewControlPlaneMembersTable, tables.NewControlPlaneVIPTable),
	cell.Provide(
		statedb.RWTable[*tables.ControlPlaneMember].ToTable,
		statedb.RWTable[*tables.ControlPlaneVIP].ToTable,
	),
	cell.Invoke(registerElection),
)
