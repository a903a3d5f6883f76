// Package l2announcer decides which IPs this node answers ARP for. For every
// group of Services a policy selects for this node, it campaigns for the
// group's Lease (cilium-l2announce-<namespace>-<name> in --k8s-namespace);
// while it holds the Lease, the group's (IP, interface) pairs are in the
// l2-announce table, which the l2-responder cell programs into eBPF.
//
// Reads: tables services, l2-policies, nodes, devices.
// Writes: tables l2-announce and l2-lease-health, Leases, policy status
// conditions.
package l2announcer

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"l2-announcer",
	"Elects the node that announces each Service",

	// The responder reconciles entries and writes their status back.
	cell.Provide(tables.NewL2AnnounceTable, statedb.RWTable[*tables.L2AnnounceEntry].ToTable),
	cell.ProvidePrivate(tables.NewL2LeaseHealthTable),
	cell.Provide(statedb.RWTable[*tables.L2LeaseHealth].ToTable),
	cell.Invoke(registerAnnouncer, registerPolicyStatus, registerLeaseGC),
)
