package allocator

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/heraldlb/herald/daemon/agentconfig"
	"github.com/heraldlb/herald/tables"
)

// Leader election timings; the same as the common controller defaults.
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

type params struct {
	cell.In

	Config      Config
	Agent       agentconfig.Config
	Log         *slog.Logger
	DB          *statedb.DB
	Jobs        job.Group
	Shutdowner  hive.Shutdowner
	Kube        kubernetes.Interface
	Services    statedb.Table[*tables.Service]
	Pools       statedb.Table[*tables.LBPool]
	Allocations statedb.RWTable[*tables.LBAllocation]
	PoolStatus  statedb.RWTable[*tables.LBPoolStatus]
}

func registerAllocator(p params) error {
	if err := p.Config.validate(); err != nil {
		return err
	}
	p.Jobs.Add(job.OneShot("leader-election", func(ctx context.Context, health cell.Health) error {
		return elect(ctx, p, health)
	}))
	return nil
}

// elect campaigns for the LB IPAM Lease and allocates while it holds it.
// Losing the Lease stops the agent: its tables would be stale, and a fresh
// start re-imports everything from Service status.
func elect(ctx context.Context, p params, health cell.Health) error {
	identity := p.Agent.Node()
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: LeaseName, Namespace: p.Agent.K8sNamespace},
			Client:     p.Kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		},
		LeaseDuration:   leaseDuration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		ReleaseOnCancel: true,
		Name:            LeaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				p.Log.Info("Became LB IPAM leader", "lease", p.Agent.K8sNamespace+"/"+LeaseName, "identity", identity)
				health.OK("leading")
				if err := allocate(ctx, p); err != nil && ctx.Err() == nil {
					p.Log.Error("LB IPAM stopped", "error", err)
					p.Shutdowner.Shutdown(hive.ShutdownWithError(err))
				}
			},
			OnStoppedLeading: func() {
				if ctx.Err() == nil {
					p.Log.Error("Lost LB IPAM leadership, stopping the agent", "lease", p.Agent.K8sNamespace+"/"+LeaseName)
					p.Shutdowner.Shutdown(hive.ShutdownWithError(errors.New("lost the LB IPAM lease")))
				}
			},
			OnNewLeader: func(id string) {
				if id != identity {
					p.Log.Info("LB IPAM leader elected", "leader", id)
					health.OK("following " + id)
				}
			},
		},
	})
	if err != nil {
		return err
	}
	health.OK("campaigning")
	le.Run(ctx)
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
