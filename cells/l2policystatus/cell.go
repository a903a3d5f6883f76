// Package l2policystatus reports, in each CiliumL2AnnouncementPolicy's
// status, the fields that do not parse (conditions
// io.cilium/bad-service-selector, io.cilium/bad-node-selector,
// io.cilium/bad-interface-regex).
//
// Reads: table l2-policies.
// Writes: policy status conditions.
package l2policystatus

import (
	"github.com/cilium/hive/cell"
)

var Cell = cell.Module(
	"l2-policy-status",
	"Reports broken L2 announcement policy fields in their status",

	cell.Invoke(registerPolicyStatus),
)
