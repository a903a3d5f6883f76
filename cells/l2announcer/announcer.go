package l2announcer

import (
	"context"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/heraldlb/herald/daemon/agentconfig"
	"github.com/heraldlb/herald/tables"
)

type announcerParams struct {
	cell.In

	Leases   agentconfig.L2Leases
	Agent    agentconfig.Config
	Log      *slog.Logger
	DB       *statedb.DB
	Jobs     job.Group
	Kube     kubernetes.Interface
	Services statedb.Table[*tables.Service]
	Policies statedb.Table[*tables.L2Policy]
	Nodes    statedb.Table[*tables.Node]
	Devices  statedb.Table[*tables.Device]
	Announce statedb.RWTable[*tables.L2AnnounceEntry]
	Metrics  prometheus.Registerer `optional:"true"`
}

func registerAnnouncer(p announcerParams) error {
	if !p.Agent.EnableL2Announcements {
		return nil
	}
	if err := p.Leases.Validate(); err != nil {
		return err
	}
	a := &announcer{announcerParams: p, node: p.Agent.Node(), heldChanged: make(chan struct{}, 1),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_l2_lease_transitions_total",
			Help: "Announcement Leases this node acquired or released (lost, given up, or its Services gone).",
		}, []string{"node", "transition"}),
		held: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "herald_l2_leases_held",
			Help: "Announcement Leases this node holds.",
		}, []string{"node"}),
	}
	if p.Metrics != nil {
		p.Metrics.MustRegister(a.transitions, a.held)
	}
	p.Jobs.Add(job.OneShot("announce", a.run))
	return nil
}

type announcer struct {
	announcerParams
	node        string
	heldChanged chan struct{}
	transitions *prometheus.CounterVec
	held        *prometheus.GaugeVec
}

// campaign is this node's participation in one Lease.
type campaign struct {
	cancel context.CancelFunc
	done   chan struct{}
	held   atomic.Bool
}

func (a *announcer) run(ctx context.Context, health cell.Health) error {
	if err := a.waitInitialized(ctx); err != nil {
		return nil
	}
	campaigns := map[string]*campaign{}
	defer a.stopAll(campaigns)
	health.OK("announcing")
	for {
		txn := a.DB.ReadTxn()
		svcs, svcWatch := a.Services.AllWatch(txn)
		pols, polWatch := a.Policies.AllWatch(txn)
		devs, devWatch := a.Devices.AllWatch(txn)
		node, _, nodeWatch, _ := a.Nodes.GetWatch(txn, tables.NodeNameIndex.Query(a.node))
		var nodeLabels map[string]string
		if node != nil {
			nodeLabels = node.Labels
		}
		sel := selectAnnouncements(statedb.Collect(svcs), statedb.Collect(pols), nodeLabels, statedb.Collect(devs))

		for lease, c := range campaigns {
			if sel[lease] == nil {
				c.cancel() // releases the Lease if held
				<-c.done
				delete(campaigns, lease)
			}
		}
		for lease := range sel {
			if campaigns[lease] == nil {
				campaigns[lease] = a.campaign(ctx, lease)
			}
		}
		a.sync(sel, campaigns)

		select {
		case <-ctx.Done():
			return nil
		case <-svcWatch:
		case <-polWatch:
		case <-devWatch:
		case <-nodeWatch:
		case <-a.heldChanged:
		}
	}
}

func (a *announcer) waitInitialized(ctx context.Context) error {
	for {
		txn := a.DB.ReadTxn()
		var pending []<-chan struct{}
		for _, init := range []func(statedb.ReadTxn) (bool, <-chan struct{}){
			a.Services.Initialized, a.Policies.Initialized, a.Nodes.Initialized, a.Devices.Initialized,
		} {
			if ok, w := init(txn); !ok {
				pending = append(pending, w)
			}
		}
		if len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-pending[0]:
		}
	}
}

// campaign starts competing for a Lease; it keeps competing (after losing
// it, too) until cancelled, and releases the Lease when cancelled.
func (a *announcer) campaign(ctx context.Context, lease string) *campaign {
	cctx, cancel := context.WithCancel(ctx)
	c := &campaign{cancel: cancel, done: make(chan struct{})}
	notify := func() {
		select {
		case a.heldChanged <- struct{}{}:
		default:
		}
	}
	go func() {
		defer close(c.done)
		for cctx.Err() == nil {
			le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
				Lock: &resourcelock.LeaseLock{
					LeaseMeta:  metav1.ObjectMeta{Name: lease, Namespace: a.Agent.K8sNamespace},
					Client:     a.Kube.CoordinationV1(),
					LockConfig: resourcelock.ResourceLockConfig{Identity: a.node},
				},
				LeaseDuration:   a.Leases.L2AnnouncementsLeaseDuration,
				RenewDeadline:   a.Leases.L2AnnouncementsRenewDeadline,
				RetryPeriod:     a.Leases.L2AnnouncementsRetryPeriod,
				ReleaseOnCancel: true,
				Name:            lease,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(context.Context) {
						a.Log.Info("Acquired announcement lease", "lease", lease, "node", a.node)
						c.held.Store(true)
						a.transitions.WithLabelValues(a.node, "acquired").Inc()
						a.held.WithLabelValues(a.node).Inc()
						notify()
					},
					OnStoppedLeading: func() {
						if c.held.Swap(false) {
							a.Log.Info("Released announcement lease", "lease", lease, "node", a.node)
							a.transitions.WithLabelValues(a.node, "released").Inc()
							a.held.WithLabelValues(a.node).Dec()
							notify()
						}
					},
				},
			})
			if err != nil {
				// The timings were validated at start; nothing else fails here.
				a.Log.Error("Cannot campaign", "lease", lease, "error", err)
				return
			}
			le.Run(cctx)
		}
	}()
	return c
}

func (a *announcer) stopAll(campaigns map[string]*campaign) {
	for _, c := range campaigns {
		c.cancel()
	}
	deadline := time.After(a.Leases.L2AnnouncementsRenewDeadline + time.Second)
	for _, c := range campaigns {
		select {
		case <-c.done:
		case <-deadline:
			return
		}
	}
}

// sync makes l2-announce hold exactly the entries of the held groups.
func (a *announcer) sync(sel selection, campaigns map[string]*campaign) {
	want := map[tables.L2AnnounceKey]*tables.L2AnnounceEntry{}
	for lease, g := range sel {
		if c := campaigns[lease]; c != nil && c.held.Load() {
			for k, e := range g.entries {
				want[k] = e
			}
		}
	}
	wtxn := a.DB.WriteTxn(a.Announce)
	defer wtxn.Commit()
	for _, e := range statedb.Collect(a.Announce.All(wtxn)) {
		k := tables.L2AnnounceKey{IP: e.IP, NetworkInterface: e.NetworkInterface}
		if w, ok := want[k]; ok && sameEntry(e, w) {
			delete(want, k)
			continue
		}
		if _, ok := want[k]; !ok {
			_, _, _ = a.Announce.Delete(wtxn, e)
		}
	}
	for _, e := range want {
		e = e.Clone()
		e.Status = reconciler.StatusPending()
		_, _, _ = a.Announce.Insert(wtxn, e)
	}
}

func sameEntry(a, b *tables.L2AnnounceEntry) bool {
	return a.Ifindex == b.Ifindex && a.MAC == b.MAC && slices.Equal(a.Origins, b.Origins)
}
