// Package l2 is L2 announcements: exactly one node answers ARP and NDP for
// each announced IP, from an eBPF responder.
//
//   - candidates: services × l2-policies × nodes × devices × l2-members →
//     l2-candidates; Events for Services nobody may announce;
//   - responder: l2-announce → the eBPF ARP/NDP responder on the selected
//     devices, gratuitous ARP;
//   - members (with the members election): the member protocol between
//     the agents, nodes × devices × l2-member-meta → l2-members (peer
//     liveness, what each published) and l2-member-confirmation (until
//     when the peers confirm this node);
//   - elector (the members election, the default) or leaseelection (a
//     Lease per group): l2-candidates (× l2-members and
//     l2-member-confirmation for the elector) × Leases → l2-announce and
//     the fence deadline (l2-lease-health); the announcement Leases; the
//     elector also l2-member-meta, what the members cell publishes;
//   - policystatus: l2-policies → the policies' status conditions;
//   - podannounce: pod-ip-allocations × devices → gratuitous ARP for new
//     pod addresses (L2 pod announcements).
package l2

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/l2/candidates"
	"github.com/heraldlb/herald/cells/l2/elector"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/cells/l2/leaseelection"
	"github.com/heraldlb/herald/cells/l2/members"
	"github.com/heraldlb/herald/cells/l2/podannounce"
	"github.com/heraldlb/herald/cells/l2/policystatus"
	"github.com/heraldlb/herald/cells/l2/responder"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Group(
	// The feature's switch, its election and the Lease timings.
	cell.Config(l2config.Defaults),
	cell.Config(l2config.DefaultL2Leases),
	cell.Invoke(l2config.Config.Validate),
	cell.Provide(asks),
	// The kinds only this feature reads, for the ground floor to reflect.
	kinds,
	// What the election decides, for the responder: the entries to answer
	// for (their status written back by the responder), and the deadline
	// it answers until. One election runs, and writes them.
	cell.Provide(
		tables.NewL2AnnounceTable, statedb.RWTable[*tables.L2AnnounceEntry].ToTable,
		tables.NewL2LeaseHealthTable, statedb.RWTable[*tables.L2LeaseHealth].ToTable,
	),
	candidates.Cell,
	// Cells stop in the reverse order they start, and a stopping agent
	// must be silent before it leaves the members (the peers take its
	// groups over as soon as they hear of it). So: the elector stops
	// first, withdraws every entry and waits until the responder confirms
	// them out of its maps, then says so (l2-member-meta, Silent); then
	// the members cell leaves the member cluster; the responder stops
	// last. Hence the responder before the members cell, and the members
	// cell before the elector. The Lease election, too, stops before the
	// responder: it releases its Leases once their entries are out.
	responder.Cell,
	members.Cell,
	elector.Cell,
	leaseelection.Cell,
	policystatus.Cell,
	podannounce.Cell,
)

// asks for what the feature needs of others while it is on: the devices
// table, and LB IPAM's IPs for Services of class io.cilium/l2-announcer.
func asks(c l2config.Config) (out struct {
	cell.Out
	Devices tables.DeviceNeed `group:"device-needs"`
	Classes []tables.LBClass  `group:"lb-classes,flatten"`
}) {
	out.Devices = tables.DeviceNeed{By: "l2-announcements", Needed: c.EnableL2Announcements}
	if c.EnableL2Announcements {
		out.Classes = []tables.LBClass{{Class: tables.LBClassL2Announcer}}
	}
	return out
}
