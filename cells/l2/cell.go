// Package l2 is L2 announcements: exactly one node answers ARP and NDP for
// each announced IP, from an eBPF responder.
//
//   - candidates: services × l2-policies × nodes × devices × l2-members →
//     l2-candidates; Events for Services nobody may announce;
//   - responder: l2-announce → the eBPF ARP/NDP responder on the selected
//     devices, gratuitous ARP;
//   - elector: l2-candidates × members (peer liveness) × Leases →
//     l2-announce and the fence deadline (l2-lease-health); the
//     announcement Leases;
//   - policystatus: l2-policies → the policies' status conditions;
//   - podannounce: pod-ip-allocations × devices → gratuitous ARP for new
//     pod addresses (L2 pod announcements).
package l2

import (
	"github.com/cilium/hive/cell"

	"github.com/heraldlb/herald/cells/l2/candidates"
	"github.com/heraldlb/herald/cells/l2/elector"
	"github.com/heraldlb/herald/cells/l2/podannounce"
	"github.com/heraldlb/herald/cells/l2/policystatus"
	"github.com/heraldlb/herald/cells/l2/responder"
)

var Cell = cell.Group(
	candidates.Cell,
	// Before the elector: cells stop in reverse order, so the responder
	// still runs when the stopping elector withdraws every entry, and the
	// node leaves the members as soon as it is silent.
	responder.Cell,
	elector.Cell,
	policystatus.Cell,
	podannounce.Cell,
)
