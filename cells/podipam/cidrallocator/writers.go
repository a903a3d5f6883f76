package cidrallocator

import (
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/internal/leader"
	"github.com/heraldlb/herald/tables"
)

type writerParams struct {
	cell.In

	Agent       agentconfig.Config
	Reconcile   reconciler.Params
	Client      versioned.Interface
	Events      record.EventRecorder
	Leadership  statedb.Table[*tables.Leadership]
	CiliumNodes statedb.Table[*tables.CiliumNode]
	Pools       statedb.Table[*tables.PodIPPool]
	Decisions   statedb.RWTable[*tables.PodCIDRDecision]
	PoolStatus  statedb.RWTable[*tables.PodIPPoolStatus]
}

func registerWriters(p writerParams) error {
	if !p.Agent.MultiPool() {
		return nil
	}
	f := leader.Fence(p.Reconcile.DB, p.Leadership, tables.PodIPAMLease)
	// Writes a lapsed term refused go out as soon as it is renewed, not
	// at their retry backoff.
	leader.RequeueOnResume(p.Reconcile.JobGroup, p.Reconcile.DB, p.Leadership, tables.PodIPAMLease, leader.StatusRows[*tables.PodCIDRDecision]{
		Name: "ciliumnodes", Table: p.Decisions, Clone: (*tables.PodCIDRDecision).Clone,
		Get: (*tables.PodCIDRDecision).GetStatus, Set: (*tables.PodCIDRDecision).SetStatus,
	})
	leader.RequeueOnResume(p.Reconcile.JobGroup, p.Reconcile.DB, p.Leadership, tables.PodIPAMLease, leader.StatusRows[*tables.PodIPPoolStatus]{
		Name: "pools", Table: p.PoolStatus, Clone: (*tables.PodIPPoolStatus).Clone,
		Get: (*tables.PodIPPoolStatus).GetStatus, Set: (*tables.PodIPPoolStatus).SetStatus,
	})
	nw := &nodeWriter{fence: f, client: p.Client, nodes: p.CiliumNodes, events: p.Events, log: p.Reconcile.Log}
	if _, err := reconciler.Register(p.Reconcile, p.Decisions,
		(*tables.PodCIDRDecision).Clone, (*tables.PodCIDRDecision).SetStatus, (*tables.PodCIDRDecision).GetStatus,
		nw, nil, reconciler.WithName("ciliumnodes"), reconciler.WithRetry(100*time.Millisecond, 30*time.Second)); err != nil {
		return err
	}
	pw := &poolWriter{fence: f, client: p.Client, pools: p.Pools, events: p.Events, log: p.Reconcile.Log, now: time.Now}
	_, err := reconciler.Register(p.Reconcile, p.PoolStatus,
		(*tables.PodIPPoolStatus).Clone, (*tables.PodIPPoolStatus).SetStatus, (*tables.PodIPPoolStatus).GetStatus,
		pw, nil, reconciler.WithName("pools"), reconciler.WithRetry(100*time.Millisecond, 30*time.Second), reconciler.WithRefreshing(10*time.Minute, nil))
	return err
}
