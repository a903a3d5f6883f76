// Package cpvip is the control-plane VIP mode (herald-agent
// control-plane-vip): one or more VIPs for the kube-apiservers of an HA
// control plane, answered on L2 by the eBPF responder of the node the
// control-plane nodes elect, while its API server is ready. It runs
// before any API server does and reads nothing from one.
//
//   - readiness: the local kube-apiserver's /readyz, with thresholds →
//     control-plane-readiness;
//   - election: the quorum election among the control-plane nodes (peer
//     secret from a file) → l2-announce and l2-lease-health, the VIPs'
//     local routes; control-plane-members and control-plane-vip;
//   - bgproutes (with bgp-local-asn): l2-announce → bgp-instances and
//     bgp-routes, for the BGP feature's speaker;
//
// The L2 announcements' responder answers for the VIPs, with maps of its
// own (<bpf-root>/herald-control-plane) beside the agent's; daemon/ wires
// it in (ResponderPinDir).
package cpvip

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/cpvip/bgproutes"
	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
	"github.com/heraldlb/herald/cells/cpvip/election"
	"github.com/heraldlb/herald/cells/cpvip/readiness"
	"github.com/heraldlb/herald/tables"
)

// ResponderPinDir is where under bpf-root the responder's maps are pinned.
const ResponderPinDir = "herald-control-plane"

var Cell = cell.Group(
	cell.Config(cpvipconfig.Defaults),
	// The configuration checked once, for every cell of the mode: a bad
	// option stops the agent at start with an error that names it.
	cell.Provide(cpvipconfig.Config.Parse),
	cell.Provide(needsDevices, newLogRecorder),
	// What the election decides, for the responder.
	cell.Provide(
		tables.NewL2AnnounceTable, statedb.RWTable[*tables.L2AnnounceEntry].ToTable,
		tables.NewL2LeaseHealthTable, statedb.RWTable[*tables.L2LeaseHealth].ToTable,
	),
	readiness.Cell,
	election.Cell,
	// With bgp-local-asn: the owner's VIPs → bgp-routes, for the BGP
	// feature's speaker (daemon/ wires it in).
	bgproutes.Cell,
)

// needsDevices asks the ground floor for the devices table.
func needsDevices() (out struct {
	cell.Out
	Devices tables.DeviceNeed `group:"device-needs"`
}) {
	out.Devices = tables.DeviceNeed{By: "control-plane-vip", Needed: true}
	return out
}
