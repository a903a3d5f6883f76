package allocator

import (
	"context"
	"iter"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Config     Config
	Agent      agentconfig.Config
	Log        *slog.Logger
	DB         *statedb.DB
	Jobs       job.Group
	Leadership statedb.Table[*tables.Leadership]
	Freshness  tables.Freshness
	Services   statedb.Table[*tables.Service]
	Pools      statedb.Table[*tables.LBPool]
	// PodPools are read under multi-pool IPAM only (podpools.go).
	PodPools    statedb.Table[*tables.PodIPPool]
	Allocations statedb.RWTable[*tables.LBAllocation]
	PoolStatus  statedb.RWTable[*tables.LBPoolStatus]
	Metrics     prometheus.Registerer `optional:"true"`
	// The classes of the announcers that are on.
	Classes []tables.LBClass `group:"lb-classes"`
}

func registerAllocator(p params) error {
	if err := p.Config.validate(); err != nil {
		return err
	}
	if p.Metrics != nil {
		p.Metrics.MustRegister(newCollector(p.DB, p.PoolStatus, p.Allocations))
	}
	p.Jobs.Add(job.OneShot("allocate", func(ctx context.Context, health cell.Health) error {
		runTerms(ctx, p, health)
		return nil
	}))
	return nil
}

// allocate is the leader's loop for one term: it catches up with the API
// server, builds a fresh engine from what the Services already hold, then
// feeds pool and Service changes to it and writes its decisions, stamped
// with the term, to the tables.
func allocate(ctx context.Context, p params, term uint64, working func()) error {
	inputs, err := watchInputs(ctx, p)
	if err != nil {
		return err
	}
	defer inputs.close()

	resp := ResponsibilityFor(p.Config.DefaultLBServiceIPAM == "lbipam", p.Classes)
	e := NewEngine(Families{IPv4: p.Agent.EnableIPv4, IPv6: p.Agent.EnableIPv6}, resp)

	first := true
	for {
		txn := p.DB.ReadTxn()
		pools, poolWatch := inputs.pools.Next(txn)
		applyPoolChanges(e, pools)
		podPoolWatch := inputs.applyPodPools(e, txn)
		svcs, svcWatch := inputs.services.Next(txn)
		if first {
			n := restoreServices(e, svcs)
			p.Log.Info("Restored allocations from Service status", "term", term, "services", n, "caught-up-in", inputs.caughtUp.Round(time.Millisecond))
			first = false
			working()
		} else {
			applyServiceChanges(e, svcs)
		}
		if res := e.Evaluate(); !res.Empty() {
			write(p, res, term)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-poolWatch:
		case <-podPoolWatch:
		case <-svcWatch:
		}
	}
}

// applyPoolChanges gives the engine the pools that changed.
func applyPoolChanges(e *Engine, changes iter.Seq2[statedb.Change[*tables.LBPool], statedb.Revision]) {
	for ch := range changes {
		if ch.Deleted {
			e.DeletePool(ch.Object.Name)
		} else {
			e.UpsertPool(ch.Object)
		}
	}
}

// restoreServices re-imports, at the start of a term, what the Services
// already have, oldest first, before anything new is handed out: a new
// term never re-IPs a Service. It returns how many Services it restored.
func restoreServices(e *Engine, changes iter.Seq2[statedb.Change[*tables.Service], statedb.Revision]) int {
	var rows []*tables.Service
	for ch := range changes {
		if !ch.Deleted {
			rows = append(rows, ch.Object)
		}
	}
	slices.SortFunc(rows, func(a, b *tables.Service) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp); c != 0 {
			return c
		}
		return strings.Compare(a.Key(), b.Key())
	})
	for _, r := range rows {
		e.Restore(r)
	}
	return len(rows)
}

// applyServiceChanges gives the engine the Services that changed during
// the term.
func applyServiceChanges(e *Engine, changes iter.Seq2[statedb.Change[*tables.Service], statedb.Revision]) {
	for ch := range changes {
		switch {
		case ch.Deleted:
			e.DeleteService(ch.Object.Key())
		case !e.Knows(ch.Object.Key()):
			// A Service first seen in this term keeps a valid, free IP
			// its status already shows, as on a restart.
			e.Restore(ch.Object)
		default:
			e.UpsertService(ch.Object)
		}
	}
}

// write stores one round of decisions; the reconcilers take it from there.
func write(p params, res Result, term uint64) {
	wtxn := p.DB.WriteTxn(p.Allocations, p.PoolStatus)
	defer wtxn.Commit()
	for _, a := range res.Allocations {
		a = a.Clone()
		a.Term = term
		a.Status = reconciler.StatusPending()
		_, _, _ = p.Allocations.Insert(wtxn, a)
		if a.Managed && !a.Satisfied {
			p.Log.Info("Service pending", "service", a.Key(), "reason", a.Reason, "message", a.Message)
		}
	}
	for _, key := range res.DeletedAllocations {
		if old, _, ok := p.Allocations.Get(wtxn, tables.LBAllocationKeyIndex.Query(key)); ok {
			_, _, _ = p.Allocations.Delete(wtxn, old)
		}
	}
	for _, st := range res.PoolStatuses {
		st = st.Clone()
		st.Term = term
		st.Status = reconciler.StatusPending()
		_, _, _ = p.PoolStatus.Insert(wtxn, st)
	}
	for _, name := range res.DeletedPools {
		if old, _, ok := p.PoolStatus.Get(wtxn, tables.LBPoolStatusNameIndex.Query(name)); ok {
			_, _, _ = p.PoolStatus.Delete(wtxn, old)
		}
	}
}
