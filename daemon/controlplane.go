package daemon

import (
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/spf13/cobra"

	"github.com/heraldlb/herald/cells/bgp/bfd"
	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/cells/bgp/speaker"
	"github.com/heraldlb/herald/cells/cpvip"
	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/ground/dbgshell"
	"github.com/heraldlb/herald/cells/ground/devices"
	"github.com/heraldlb/herald/cells/ground/health"
	"github.com/heraldlb/herald/cells/ground/metrics"
	"github.com/heraldlb/herald/cells/ground/pprof"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/cells/l2/responder"
)

// ControlPlaneCells are the control-plane VIP mode's: the ground floor
// without anything Kubernetes (no client, no reflectors, no Lease
// elections: the API server is what the VIP serves), and the mode.
var ControlPlaneCells = []cell.Cell{
	health.Cell,
	job.Cell,
	statedb.Cell,
	metrics.Cell,
	pprof.NewCell(pprof.ControlPlaneDefaults),
	// netlink → table devices: where the VIPs are answered.
	devices.Cell,
	// Every table and the configuration → herald-dbg --socket
	// /var/run/herald/control-plane.sock.
	dbgshell.NewCell(dbgshell.ControlPlaneSocket),
	// L2 announcements' responder, with maps of its own, answering for
	// what the election puts into l2-announce. Started before the
	// election, so stopped after it: the election gives the VIPs up
	// through it when the agent stops.
	responder.NewCell(cpvip.ResponderPinDir),
	cell.Provide(
		// What the responder reads of the agent's configuration: this
		// node's name, and that it answers.
		func(c cpvipconfig.Config) agentconfig.Config { return agentconfig.Config{NodeName: c.Node()} },
		func() l2config.Config { return l2config.Config{EnableL2Announcements: true} },
	),
	// The VIPs: readiness of the local API server, the election among
	// the control-plane nodes.
	cpvip.Cell,
	// The BGP feature's speaker (GoBGP), with bgp-local-asn: the owner's
	// VIPs to the routers of bgp-peers; and its BFD sessions, with
	// bgp-bfd-interval, which reset a router's session when they fail.
	speaker.Cell,
	bfd.Cell,
	cell.Provide(
		func(c cpvipconfig.Config) bgpconfig.Config {
			return bgpconfig.Config{EnableBGPControlPlane: c.BGPLocalASN != 0}
		},
	),
	health.Started,
}

// ControlPlaneEnvPrefix starts the environment variable of each option of
// the control-plane VIP mode: HERALD_CP_VIPS for vips.
const ControlPlaneEnvPrefix = "HERALD_CP_"

// NewControlPlane returns the control-plane VIP mode's hive.
func NewControlPlane(extra ...cell.Cell) *hive.Hive {
	return hive.NewWithOptions(hiveOptions(ControlPlaneEnvPrefix, time.Minute, 30*time.Second), append(ControlPlaneCells, extra...)...)
}

// newControlPlaneCommand is `herald-agent control-plane-vip`.
func newControlPlaneCommand() *cobra.Command {
	effective := &agentconfig.Effective{}
	h := NewControlPlane(cell.Provide(func() *agentconfig.Effective { return effective }))
	var configDir, logLevel string
	cmd := &cobra.Command{
		Use:   "control-plane-vip",
		Short: "Announce VIPs for the kube-apiservers of an HA control plane (static Pod or systemd unit on each control-plane node)",
		Long: `Runs on every control-plane node, before any API server is up, and reads nothing from one.
The nodes listed in --peers elect the owner of the VIPs among the nodes whose local
kube-apiserver answers /readyz; the owner answers ARP and NDP for them from eBPF.
See Documentation/control-plane-vip.md.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          run(h, effective, &configDir, &logLevel, ControlPlaneEnvPrefix, false),
	}
	registerFlags(cmd, h, &configDir, &logLevel, "Directory with one file per option; command-line flags take precedence")
	return cmd
}
