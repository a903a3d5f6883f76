// Package bgp is the BGP control plane: this node's routes to its peers
// with GoBGP embedded.
//
//   - gateways: netlink → bgp-default-gateways, bgp-link-neighbors (the
//     peers found by autoDiscovery);
//   - desired: BGP resources × nodes × services × endpoint-slices × pod
//     CIDRs → bgp-instances, bgp-routes;
//   - speaker: bgp-instances × bgp-routes → GoBGP (sessions, RIB, export
//     policy); sessions → bgp-peers;
//   - routeradv: bgp-instances → IPv6 Router Advertisements on the
//     interfaces of BGP unnumbered peers (how they find the node);
//   - bfd: bgp-instances → BFD sessions with the peers that ask for them →
//     bgp-bfd (the speaker resets a BGP session whose BFD session fails);
//   - status: bgp-instances × bgp-peers → CiliumBGPNodeConfig; problems of
//     the BGP resources → their status conditions.
package bgp

import (
	"github.com/cilium/hive/cell"

	"github.com/heraldlb/herald/cells/bgp/bfd"
	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/cells/bgp/desired"
	"github.com/heraldlb/herald/cells/bgp/gateways"
	"github.com/heraldlb/herald/cells/bgp/routeradv"
	"github.com/heraldlb/herald/cells/bgp/speaker"
	"github.com/heraldlb/herald/cells/bgp/status"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Group(
	// enable-bgp-control-plane and bgp-secrets-namespace, read by every
	// cell of the feature.
	cell.Config(bgpconfig.Defaults),
	cell.Provide(asks),
	// The kinds only this feature reads, for the ground floor to reflect.
	kinds,
	gateways.Cell,
	desired.Cell,
	routeradv.Cell,
	bfd.Cell,
	speaker.Cell,
	status.Cell,
)

// asks for what the feature needs of others while it is on: LB IPAM's
// IPs for Services of class io.cilium/bgp-control-plane, and the devices
// table (the speaker finds there the IPv6 next hop of IPv6 routes sent
// over IPv4 sessions; a node without an IPv4 address takes its router ID
// from a MAC address, as Cilium's do).
func asks(c bgpconfig.Config) (out struct {
	cell.Out
	Devices tables.DeviceNeed `group:"device-needs"`
	Classes []tables.LBClass  `group:"lb-classes,flatten"`
}) {
	out.Devices = tables.DeviceNeed{By: "bgp-control-plane", Needed: c.EnableBGPControlPlane}
	if c.EnableBGPControlPlane {
		out.Classes = []tables.LBClass{{Class: tables.LBClassBGP}}
	}
	return out
}
