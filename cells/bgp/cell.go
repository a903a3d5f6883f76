// Package bgp is the BGP control plane: this node's routes to its peers
// with GoBGP embedded.
//
//   - desired: BGP resources × nodes × services × endpoint-slices × pod
//     CIDRs → bgp-instances, bgp-routes;
//   - speaker: bgp-instances × bgp-routes → GoBGP (sessions, RIB, export
//     policy); sessions → bgp-peers;
//   - status: bgp-instances × bgp-peers → CiliumBGPNodeConfig; problems of
//     the BGP resources → their status conditions.
package bgp

import (
	"github.com/cilium/hive/cell"

	"github.com/heraldlb/herald/cells/bgp/desired"
	"github.com/heraldlb/herald/cells/bgp/speaker"
	"github.com/heraldlb/herald/cells/bgp/status"
)

var Cell = cell.Group(
	desired.Cell,
	speaker.Cell,
	status.Cell,
)
