// Package servicestatus writes LB IPAM's decisions into Service status:
// the IPs into status.loadBalancer.ingress and the
// io.cilium/lb-ipam-request-satisfied condition, and records Events on the
// Service when IPs are assigned or released or the request is pending.
//
// Reads: tables lb-allocations and services.
// Writes: Service status (server-side apply, field manager "herald"), Events.
package servicestatus

import (
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"service-status",
	"Writes LB IPAM decisions to Service status",

	cell.Invoke(registerReconciler),
)

func registerReconciler(p reconciler.Params, allocs statedb.RWTable[*tables.LBAllocation], services statedb.Table[*tables.Service], kube kubernetes.Interface, rec record.EventRecorder) error {
	ops := &statusWriter{kube: kube, services: services, events: rec, log: p.Log, now: time.Now}
	_, err := reconciler.Register(p, allocs,
		(*tables.LBAllocation).Clone,
		(*tables.LBAllocation).SetStatus,
		(*tables.LBAllocation).GetStatus,
		ops, ops,
		reconciler.WithRetry(100*time.Millisecond, 30*time.Second),
		// Refresh catches status edited by hand back to what LB IPAM decided.
		reconciler.WithRefreshing(10*time.Minute, nil),
	)
	return err
}
