// Package servicestatus writes LB IPAM's decisions into Service status:
// the IPs into status.loadBalancer.ingress and the
// io.cilium/lb-ipam-request-satisfied condition, and records Events on the
// Service when IPs are assigned or released or the request is pending.
//
// Reads: tables lb-allocations, services and leadership.
// Writes: Service status (server-side apply, field manager "herald", through
// the client without a client-side rate limit), Events (paced: held back
// while a burst of status writes goes on).
//
// Every write is fenced twice: it goes out only while the LB IPAM term it
// was decided in is still valid (tables.Leadership.Fence, checked right
// before sending), and it is conditional on the resourceVersion of the
// Service it was checked against, so that it fails rather than overwrite a
// newer leader's write.
package servicestatus

import (
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/cells/internal/kubeclient"
	"github.com/heraldlb/herald/cells/internal/leader"
	"github.com/heraldlb/herald/tables"
)

var Cell = cell.Module(
	"service-status",
	"Writes LB IPAM decisions to Service status",

	cell.Provide(reflections),
	cell.Invoke(registerReconciler),
)

type params struct {
	cell.In

	Reconcile  reconciler.Params
	Allocs     statedb.RWTable[*tables.LBAllocation]
	Services   statedb.Table[*tables.Service]
	Leadership statedb.Table[*tables.Leadership]
	Jobs       job.Group
	Kube       kubeclient.Unthrottled
	Events     record.EventRecorder
	Metrics    prometheus.Registerer `optional:"true"`
}

func registerReconciler(p params) error {
	events := newPacer(p.Events, p.Reconcile.Log)
	p.Jobs.Add(job.OneShot("pace-events", events.run))
	ops := &statusWriter{kube: p.Kube, services: p.Services, events: events, wrote: events.wrote, log: p.Reconcile.Log, now: time.Now,
		fence: leader.Fence(p.Reconcile.DB, p.Leadership, tables.LBIPAMLease),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "herald_lbipam_assignment_latency_seconds",
			Help:    "From a Service's creation to its first IP written into its status.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		})}
	if p.Metrics != nil {
		p.Metrics.MustRegister(ops.latency)
	}
	leader.RequeueOnResume(p.Jobs, p.Reconcile.DB, p.Leadership, tables.LBIPAMLease, leader.StatusRows[*tables.LBAllocation]{
		Name:  "service-status",
		Table: p.Allocs, Clone: (*tables.LBAllocation).Clone, Get: (*tables.LBAllocation).GetStatus, Set: (*tables.LBAllocation).SetStatus,
	})
	_, err := reconciler.Register(p.Reconcile, p.Allocs,
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

// reflections asks the ground floor for the Kubernetes objects this cell
// reads.
func reflections() tables.Reflections {
	return tables.Reflect(tables.ServicesTableName)
}
