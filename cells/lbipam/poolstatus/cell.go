// Package poolstatus writes the status LB IPAM computes for each
// CiliumLoadBalancerIPPool: the cilium.io/PoolConflict condition and the
// cilium.io/IPsTotal, IPsAvailable and IPsUsed counts, Herald's
// io.cilium/bad-service-selector and io.cilium/bad-blocks, and records an
// Event when a pool starts conflicting, runs out of addresses or has an
// invalid selector or block.
//
// Reads: tables lb-pool-status, lb-pools and leadership.
// Writes: pool status (merge patch of the status subresource, conditional
// on the pool's resourceVersion and fenced by the LB IPAM term), Events.
package poolstatus

import (
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"golang.org/x/time/rate"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/internal/leader"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"pool-status",
	"Writes LB IPAM pool status",

	cell.Provide(reflections),
	cell.Invoke(registerReconciler),
)

type params struct {
	cell.In

	Reconcile  reconciler.Params
	Status     statedb.RWTable[*tables.LBPoolStatus]
	Pools      statedb.Table[*tables.LBPool]
	Leadership statedb.Table[*tables.Leadership]
	Client     versioned.Interface
	Events     record.EventRecorder
}

func registerReconciler(p params) error {
	w := &statusWriter{
		client: p.Client, pools: p.Pools, events: p.Events, now: time.Now, log: p.Reconcile.Log,
		fence: leader.Fence(p.Reconcile.DB, p.Leadership, tables.LBIPAMLease),
	}
	leader.RequeueOnResume(p.Reconcile.JobGroup, p.Reconcile.DB, p.Leadership, tables.LBIPAMLease, leader.StatusRows[*tables.LBPoolStatus]{
		Name:  "pool-status",
		Table: p.Status, Clone: (*tables.LBPoolStatus).Clone, Get: (*tables.LBPoolStatus).GetStatus, Set: (*tables.LBPoolStatus).SetStatus,
	})
	_, err := reconciler.Register(p.Reconcile, p.Status,
		(*tables.LBPoolStatus).Clone,
		(*tables.LBPoolStatus).SetStatus,
		(*tables.LBPoolStatus).GetStatus,
		w, nil,
		reconciler.WithRetry(100*time.Millisecond, 30*time.Second),
		reconciler.WithRefreshing(10*time.Minute, nil),
		// A pool's counts change with every Service that gets an address
		// from it. One write per second at most: a burst of 1000 new
		// Services costs a handful of pool writes instead of one per batch
		// of allocations (600 in a measured run), and the status is exact
		// again within a second of the burst's last allocation.
		reconciler.WithRoundLimits(maxPoolsPerRound, rate.NewLimiter(rate.Every(writeInterval), 1)),
	)
	return err
}

const (
	// writeInterval is the least time between two rounds of pool status
	// writes; a round writes every pool whose status changed since the last.
	writeInterval    = time.Second
	maxPoolsPerRound = 1000
)

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections() tables.Reflections {
	return tables.Reflect(tables.LBPoolsTableName)
}
