// Package poolstatus writes the status LB IPAM computes for each
// CiliumLoadBalancerIPPool: the cilium.io/PoolConflict condition and the
// cilium.io/IPsTotal, IPsAvailable and IPsUsed counts, and records an Event
// when a pool starts conflicting or runs out of addresses.
//
// Reads: tables lb-pool-status and lb-pools.
// Writes: pool status (merge patch of the status subresource), Events.
package poolstatus

import (
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"pool-status",
	"Writes LB IPAM pool status",

	cell.Invoke(registerReconciler),
)

func registerReconciler(p reconciler.Params, status statedb.RWTable[*tables.LBPoolStatus], pools statedb.Table[*tables.LBPool], client versioned.Interface, rec record.EventRecorder) error {
	w := &statusWriter{client: client, pools: pools, events: rec, now: time.Now}
	_, err := reconciler.Register(p, status,
		(*tables.LBPoolStatus).Clone,
		(*tables.LBPoolStatus).SetStatus,
		(*tables.LBPoolStatus).GetStatus,
		w, nil,
		reconciler.WithRetry(100*time.Millisecond, 30*time.Second),
		reconciler.WithRefreshing(10*time.Minute, nil),
	)
	return err
}
