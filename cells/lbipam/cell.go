// Package lbipam is the LB IPAM feature: LoadBalancer IPs from the
// CiliumLoadBalancerIPPools, written into the Services' status.
//
//   - allocator (leader only): services × lb-pools → lb-allocations,
//     lb-pool-status;
//   - servicestatus: lb-allocations → Service status (ingress IPs, the
//     condition) and Events;
//   - poolstatus: lb-pool-status → the pools' status conditions and Events.
package lbipam

import (
	"github.com/cilium/hive/cell"

	"github.com/heraldlb/herald/cells/lbipam/allocator"
	"github.com/heraldlb/herald/cells/lbipam/poolstatus"
	"github.com/heraldlb/herald/cells/lbipam/servicestatus"
)

var Cell = cell.Group(
	allocator.Cell,
	servicestatus.Cell,
	poolstatus.Cell,
)
