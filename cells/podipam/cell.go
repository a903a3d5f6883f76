// Package podipam is multi-pool pod IPAM (ipam: multi-pool): per-node pod
// CIDRs from several CiliumPodIPPools, addresses for the herald-ipam CNI
// plugin.
//
//   - cidrallocator (leader only): pod-ip-pools × cilium-nodes × nodes →
//     the CiliumNodes' CIDRs, the pools' status;
//   - nodeipam (every node): its CIDRs → addresses for herald-ipam, the
//     journal, its CiliumNode's requests and releases;
//   - noderoutes: cilium-nodes × nodes → routes to the other nodes' pod
//     CIDRs.
package podipam

import (
	"github.com/cilium/hive/cell"

	"github.com/heraldlb/herald/cells/podipam/cidrallocator"
	"github.com/heraldlb/herald/cells/podipam/nodeipam"
	"github.com/heraldlb/herald/cells/podipam/noderoutes"
)

var Cell = cell.Group(
	// The kinds only this feature reads, for the ground floor to reflect.
	kinds,
	cidrallocator.Cell,
	nodeipam.Cell,
	noderoutes.Cell,
)
