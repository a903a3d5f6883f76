package allocator

import (
	"context"
	"log/slog"
	"slices"
	"strings"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldlb/herald/daemon/agentconfig"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Config      Config
	Agent       agentconfig.Config
	Log         *slog.Logger
	DB          *statedb.DB
	Jobs        job.Group
	Shutdowner  hive.Shutdowner
	Leadership  leadership
	Services    statedb.Table[*tables.Service]
	Pools       statedb.Table[*tables.LBPool]
	Allocations statedb.RWTable[*tables.LBAllocation]
	PoolStatus  statedb.RWTable[*tables.LBPoolStatus]
	Metrics     prometheus.Registerer `optional:"true"`
}

func registerAllocator(p params) error {
	if err := p.Config.validate(); err != nil {
		return err
	}
	if p.Metrics != nil {
		p.Metrics.MustRegister(newCollector(p.DB, p.PoolStatus, p.Allocations))
	}
	p.Jobs.Add(job.OneShot("leader-election", func(ctx context.Context, health cell.Health) error {
		p.Leadership.Run(ctx, health, func(ctx context.Context) {
			if err := allocate(ctx, p); err != nil && ctx.Err() == nil {
				p.Log.Error("LB IPAM stopped", "error", err)
				p.Shutdowner.Shutdown(hive.ShutdownWithError(err))
			}
		})
		return nil
	}))
	return nil
}

// allocate is the leader's loop: it feeds pool and Service changes to the
// engine and writes the decisions to the tables.
func allocate(ctx context.Context, p params) error {
	if err := waitInitialized(ctx, p); err != nil {
		return err
	}
	wtxn := p.DB.WriteTxn(p.Services, p.Pools)
	svcChanges, err := p.Services.Changes(wtxn)
	if err != nil {
		wtxn.Abort()
		return err
	}
	poolChanges, err := p.Pools.Changes(wtxn)
	if err != nil {
		wtxn.Abort()
		return err
	}
	wtxn.Commit()
	defer svcChanges.Close()
	defer poolChanges.Close()

	resp := Responsibility{
		DefaultIPAM: p.Config.DefaultLBServiceIPAM == "lbipam",
		L2:          p.Agent.EnableL2Announcements,
		BGP:         p.Agent.EnableBGPControlPlane,
	}
	e := NewEngine(Families{IPv4: p.Agent.EnableIPv4, IPv6: p.Agent.EnableIPv6}, resp)

	first := true
	for {
		txn := p.DB.ReadTxn()
		pools, poolWatch := poolChanges.Next(txn)
		for ch := range pools {
			if ch.Deleted {
				e.DeletePool(ch.Object.Name)
			} else {
				e.UpsertPool(ch.Object)
			}
		}
		svcs, svcWatch := svcChanges.Next(txn)
		if first {
			// Re-import what the Services already have, oldest first, before
			// anything new is handed out: a restart never re-IPs a Service.
			var rows []*tables.Service
			for ch := range svcs {
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
			p.Log.Info("Restored allocations from Service status", "services", len(rows))
			first = false
		} else {
			for ch := range svcs {
				if ch.Deleted {
					e.DeleteService(ch.Object.Key())
				} else {
					e.UpsertService(ch.Object)
				}
			}
		}
		if res := e.Evaluate(); !res.Empty() {
			write(p, res)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-poolWatch:
		case <-svcWatch:
		}
	}
}

func waitInitialized(ctx context.Context, p params) error {
	for {
		txn := p.DB.ReadTxn()
		svcOK, svcWatch := p.Services.Initialized(txn)
		poolOK, poolWatch := p.Pools.Initialized(txn)
		if svcOK && poolOK {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-svcWatch:
		case <-poolWatch:
		}
	}
}

// write stores one round of decisions; the reconcilers take it from there.
func write(p params, res Result) {
	wtxn := p.DB.WriteTxn(p.Allocations, p.PoolStatus)
	defer wtxn.Commit()
	for _, a := range res.Allocations {
		a = a.Clone()
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
		st.Status = reconciler.StatusPending()
		_, _, _ = p.PoolStatus.Insert(wtxn, st)
	}
	for _, name := range res.DeletedPools {
		if old, _, ok := p.PoolStatus.Get(wtxn, tables.LBPoolStatusNameIndex.Query(name)); ok {
			_, _, _ = p.PoolStatus.Delete(wtxn, old)
		}
	}
}
