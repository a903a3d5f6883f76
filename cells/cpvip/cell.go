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
//   - the L2 announcements' responder, with maps of its own
//     (<bpf-root>/herald-control-plane), beside the agent's.
package cpvip

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/cpvip/cpconfig"
	"github.com/heraldlb/herald/cells/cpvip/election"
	"github.com/heraldlb/herald/cells/cpvip/readiness"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/cells/l2/responder"
	"github.com/heraldlb/herald/tables"
)

// PinDir is where under bpf-root the responder's maps are pinned.
const PinDir = "herald-control-plane"

var Cell = cell.Group(
	cell.Config(cpconfig.Defaults),
	cell.Provide(
		// What the responder reads of the agent's configuration: this
		// node's name, and that it answers.
		func(c cpconfig.Config) agentconfig.Config { return agentconfig.Config{NodeName: c.Node()} },
		func() l2config.Config { return l2config.Config{EnableL2Announcements: true} },
		needsDevices,
		newLogRecorder,
	),
	cell.Provide(
		tables.NewL2AnnounceTable, statedb.RWTable[*tables.L2AnnounceEntry].ToTable,
		tables.NewL2LeaseHealthTable, statedb.RWTable[*tables.L2LeaseHealth].ToTable,
	),
	readiness.Cell,
	// Started before the election, so stopped after it: the election
	// gives the VIPs up through it when the agent stops.
	responder.NewCell(PinDir),
	election.Cell,
)

// needsDevices asks the ground floor for the devices table.
func needsDevices() (out struct {
	cell.Out
	Devices tables.DeviceNeed `group:"device-needs"`
}) {
	out.Devices = tables.DeviceNeed{By: "control-plane-vip", Needed: true}
	return out
}
