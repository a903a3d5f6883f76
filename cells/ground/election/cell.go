// Package election runs the Lease elections other cells ask for: those of
// Herald's cluster-wide singletons (the LB IPAM allocator, the pod CIDR
// allocator) and each node's own L2 Lease (herald-l2-node-<node>, the L2
// elector's fence), and owns their fencing contract: when a term starts
// and ends, and until when the leader may still write.
//
// Reads: the Leases named by the tables.Election values other cells
// provide (group "elections"), in --k8s-namespace.
// Writes: those Leases, and table leadership (one row per Lease). Writers
// of other cells check a row's Fence right before every write of a term.
//
// The elector itself (cells/internal/lease) keeps client-go's Lease record
// format, so `kubectl get lease` and mixed versions read the same thing.
package election

import (
	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"election",
	"Lease elections and the leadership table",

	cell.ProvidePrivate(tables.NewLeadershipTable),
	cell.Provide(statedb.RWTable[*tables.Leadership].ToTable),
	cell.Invoke(registerCampaigns),
)
