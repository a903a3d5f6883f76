package cidrallocator

import (
	"context"
	"iter"
	"log/slog"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/internal/leader"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Config      Config
	Agent       agentconfig.Config
	Log         *slog.Logger
	DB          *statedb.DB
	Jobs        job.Group
	Herald      versioned.Interface
	Leadership  statedb.Table[*tables.Leadership]
	Freshness   tables.Freshness
	Pools       statedb.Table[*tables.PodIPPool]
	LBPools     statedb.Table[*tables.LBPool]
	CiliumNodes statedb.Table[*tables.CiliumNode]
	Nodes       statedb.Table[*tables.Node]
	Decisions   statedb.RWTable[*tables.PodCIDRDecision]
	PoolStatus  statedb.RWTable[*tables.PodIPPoolStatus]
	Metrics     prometheus.Registerer `optional:"true"`
}

func registerAllocator(p params) error {
	if !p.Agent.MultiPool() {
		return nil
	}
	if err := p.Config.validate(); err != nil {
		return err
	}
	if p.Metrics != nil {
		p.Metrics.MustRegister(newCollector(p.DB, p.PoolStatus))
	}
	p.Jobs.Add(job.OneShot("allocate", func(ctx context.Context, health cell.Health) error {
		leader.Job{DB: p.DB, Leadership: p.Leadership, Lease: tables.PodIPAMLease, Name: "Pod CIDR allocator", RetryAfter: time.Second,
			Run:   func(ctx context.Context, term uint64, working func()) error { return allocate(ctx, p, term, working) },
			Clear: func() { clearDecisions(p) },
		}.Follow(ctx, health, p.Log)
		return nil
	}))
	return nil
}

// allocate runs one term: catch up, auto-create pools, rebuild the engine
// from what the CiliumNodes hold, then follow the changes.
func allocate(ctx context.Context, p params, term uint64, working func()) error {
	if err := tables.WaitInitialized(ctx, p.DB, p.Pools, p.CiliumNodes, p.Nodes, p.LBPools); err != nil {
		return err
	}
	pools, _ := parseAutoCreate(p.Config.AutoCreateCiliumPodIPPools) // validated at start
	if created, err := autoCreate(ctx, p.Herald, pools); err != nil {
		return err
	} else if len(created) > 0 {
		p.Log.Info("Created CiliumPodIPPools", "pools", created)
	}
	in, err := watchInputs(ctx, p)
	if err != nil {
		return err
	}
	defer in.close()

	e := NewEngine()
	first := true
	var timer <-chan time.Time
	for {
		txn := p.DB.ReadTxn()
		ps, poolWatch := in.pools.Next(txn)
		applyPoolChanges(e, ps)
		lbs, lbWatch := in.lbPools.Next(txn)
		applyLBPoolChanges(e, lbs)
		ns, nodeWatch := in.nodes.Next(txn)
		applyNodeChanges(e, ns)
		cns, cnWatch := in.ciliumNodes.Next(txn)
		count := applyCiliumNodeChanges(e, cns)
		if first {
			p.Log.Info("Restored pod CIDRs from the CiliumNodes", "term", term, "nodes", count, "caught-up-in", in.caughtUp.Round(time.Millisecond))
			working()
			first = false
		}
		res := e.Evaluate(time.Now())
		if !res.Empty() {
			write(p, res, term)
		}
		timer = nil
		if !res.NextCheck.IsZero() {
			timer = time.After(time.Until(res.NextCheck) + time.Second)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-poolWatch:
		case <-lbWatch:
		case <-nodeWatch:
		case <-cnWatch:
		case <-timer:
			e.Recheck()
		}
	}
}

// applyPoolChanges gives the engine the pools that changed.
func applyPoolChanges(e *Engine, changes iter.Seq2[statedb.Change[*tables.PodIPPool], statedb.Revision]) {
	for ch := range changes {
		if ch.Deleted {
			e.DeletePool(ch.Object.Name)
		} else {
			e.UpsertPool(ch.Object)
		}
	}
}

// applyLBPoolChanges gives the engine the CiliumLoadBalancerIPPools that
// changed.
func applyLBPoolChanges(e *Engine, changes iter.Seq2[statedb.Change[*tables.LBPool], statedb.Revision]) {
	for ch := range changes {
		if ch.Deleted {
			e.DeleteLBPool(ch.Object.Name)
		} else {
			e.UpsertLBPool(ch.Object)
		}
	}
}

// applyNodeChanges tells the engine which Kubernetes Nodes exist.
func applyNodeChanges(e *Engine, changes iter.Seq2[statedb.Change[*tables.Node], statedb.Revision]) {
	for ch := range changes {
		e.SetK8sNode(ch.Object.Name, !ch.Deleted)
	}
}

// applyCiliumNodeChanges gives the engine the CiliumNodes that changed,
// and returns how many were upserted (for the restore log line).
func applyCiliumNodeChanges(e *Engine, changes iter.Seq2[statedb.Change[*tables.CiliumNode], statedb.Revision]) int {
	count := 0
	for ch := range changes {
		if ch.Deleted {
			e.DeleteNode(ch.Object.Name)
		} else {
			e.UpsertNode(ch.Object)
			count++
		}
	}
	return count
}

func write(p params, res Result, term uint64) {
	wtxn := p.DB.WriteTxn(p.Decisions, p.PoolStatus)
	defer wtxn.Commit()
	for _, d := range res.Decisions {
		d = d.Clone()
		d.Term = term
		d.Status = reconciler.StatusPending()
		_, _, _ = p.Decisions.Insert(wtxn, d)
	}
	for _, name := range res.DeletedDecisions {
		if old, _, ok := p.Decisions.Get(wtxn, tables.PodCIDRDecisionNodeIndex.Query(name)); ok {
			_, _, _ = p.Decisions.Delete(wtxn, old)
		}
	}
	for _, st := range res.PoolStatuses {
		st = st.Clone()
		st.Term = term
		st.Status = reconciler.StatusPending()
		_, _, _ = p.PoolStatus.Insert(wtxn, st)
	}
	for _, name := range res.DeletedPools {
		if old, _, ok := p.PoolStatus.Get(wtxn, tables.PodIPPoolStatusNameIndex.Query(name)); ok {
			_, _, _ = p.PoolStatus.Delete(wtxn, old)
		}
	}
}

// clearDecisions empties the tables: decisions belong to one term.
func clearDecisions(p params) {
	wtxn := p.DB.WriteTxn(p.Decisions, p.PoolStatus)
	_ = p.Decisions.DeleteAll(wtxn)
	_ = p.PoolStatus.DeleteAll(wtxn)
	wtxn.Commit()
}
