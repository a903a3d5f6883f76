package responder

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/record"

	"github.com/heraldlb/herald/bpf"
	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/internal/neigh"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Config    Config
	Pin       pinDir
	Agent     agentconfig.Config
	L2        l2config.Config
	Log       *slog.Logger
	DB        *statedb.DB
	Jobs      job.Group
	Lifecycle cell.Lifecycle
	Reconcile reconciler.Params
	Devices   statedb.Table[*tables.Device]
	Announce  statedb.RWTable[*tables.L2AnnounceEntry]
	Health    statedb.Table[*tables.L2LeaseHealth]
	Events    record.EventRecorder
	Metrics   prometheus.Registerer `optional:"true"`
}

func registerResponder(p params) error {
	if !p.L2.EnableL2Announcements {
		return nil
	}
	if err := p.Config.validate(); err != nil {
		return err
	}
	h := &handle{}
	registerProgram(p, h)
	p.Jobs.Add(job.OneShot("heartbeat", func(ctx context.Context, health cell.Health) error {
		return heartbeat(ctx, p, h, health)
	}))

	m := newMetrics(h, p.Agent.Node())
	if p.Metrics != nil {
		p.Metrics.MustRegister(m)
	}
	cf := newConflicts(p.Agent.Node(), p.Log, p.Events)
	if p.Metrics != nil {
		p.Metrics.MustRegister(cf.counter)
	}
	nd := neigh.NewNDP()
	p.Lifecycle.Append(cell.Hook{OnStop: func(cell.HookContext) error { return nd.Close() }})
	ops := newMapOps(p, h, nd, m, cf)
	// What the program notices while this node answers: another host
	// speaking for one of its addresses.
	p.Jobs.Add(job.Timer("conflicts", func(context.Context) error {
		return cf.poll(h.get(), p.DB.ReadTxn(), p.Announce)
	}, time.Second))
	p.Jobs.Add(job.OneShot("attach", func(ctx context.Context, health cell.Health) error {
		return attachLoop(ctx, p, h, ops, health)
	}))
	_, err := reconciler.Register(p.Reconcile, p.Announce,
		(*tables.L2AnnounceEntry).Clone,
		(*tables.L2AnnounceEntry).SetStatus,
		(*tables.L2AnnounceEntry).GetStatus,
		ops, ops,
		reconciler.WithRetry(50*time.Millisecond, retryMax),
		// A full pass every minute removes strays: map entries nobody wants
		// (left by a crash, or written by hand).
		reconciler.WithPruning(time.Minute),
		reconciler.WithRefreshing(time.Minute, nil),
	)
	return err
}

// registerProgram loads the program at start, silent and without the
// entries a previous run pinned, and detaches it at stop.
func registerProgram(p params, h *handle) {
	p.Lifecycle.Append(cell.Hook{
		OnStart: func(cell.HookContext) error {
			if err := bpf.EnsureBPFFS(p.Config.BPFRoot); err != nil {
				return err
			}
			r, err := bpf.Load(bpf.Mode(p.Config.L2ResponderMode), filepath.Join(p.Config.BPFRoot, string(p.Pin)))
			if err != nil {
				return err
			}
			h.set(r)
			// Entries pinned by a previous run are for Leases this agent does
			// not hold (yet): forget them before anything is attached.
			stale, err := r.Entries()
			if err != nil {
				return err
			}
			for _, e := range stale {
				if err := r.Delete(e.IP, e.Ifindex); err != nil {
					return err
				}
			}
			// Silent until the elector publishes a deadline.
			return r.Heartbeat(0)
		},
		OnStop: func(cell.HookContext) error {
			// Detaches every program: a stopped agent answers for nothing.
			return h.get().Close()
		},
	})
}

// heartbeat keeps the program's deadline: it answers until the moment
// the election says this node may answer, and no longer. It is pushed
// forward as soon as a later one is published; after a freeze, or when
// the node's liveness cannot be confirmed, it runs out and the program
// falls silent by itself, even before the agent notices.
func heartbeat(ctx context.Context, p params, h *handle, health cell.Health) error {
	lastFailed, first := false, true
	for {
		lh, _, changed, ok := p.Health.GetWatch(p.DB.ReadTxn(), tables.L2LeaseHealthNodeIndex.Query(p.Agent.Node()))
		var err error
		if ok && time.Until(lh.FreshUntil) > 0 {
			err = h.get().HeartbeatUntil(lh.FreshUntil)
		}
		// Health changes only when the outcome does: this loop runs on
		// every renewal.
		if failing := err != nil; failing != lastFailed || first {
			if failing {
				health.Degraded("cannot refresh the heartbeat", err)
			} else {
				health.OK("heartbeat refreshed")
			}
			lastFailed, first = failing, false
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// newMapOps is the reconciler's operations on the program's maps, with
// the probes and announcements around a takeover.
func newMapOps(p params, h *handle, nd *neigh.NDP, m *metrics, cf *conflicts) *mapOps {
	ops := &mapOps{h: h, log: p.Log, ndp: nd, conflicts: cf, waiting: newWaitlist(),
		probe: neigh.Probe}
	ops.announce = func(ifindex int, mac net.HardwareAddr, ips []netip.Addr) error {
		var v4 []netip.Addr
		var errs []error
		for _, ip := range ips {
			if ip.Is4() {
				v4 = append(v4, ip)
				continue
			}
			if err := nd.Advertise(ifindex, ip, mac); err != nil {
				errs = append(errs, err)
			} else {
				m.unsolicitedNAs.Inc()
			}
		}
		// One socket for all of them (see neigh.SendGratuitousARPs).
		if err := neigh.SendGratuitousARPs(ifindex, mac, v4...); err != nil {
			errs = append(errs, err)
		} else {
			m.garps.Add(float64(len(v4)))
		}
		return errors.Join(errs...)
	}
	return ops
}

// retryMax bounds the reconciler's backoff. Its most common error is an
// address conflict found by the probe: the entry is retried, that is
// probed again, until the other host gives the address up. Half a second
// at most between probes lets a node take the address within about that
// once it is free, which is what a takeover from another announcer needs
// (Documentation/migrating-from-metallb.md), for at most two probe frames
// a second per address in conflict.
const retryMax = 500 * time.Millisecond

// probeWait is how long a probe for address conflicts listens for answers
// before this node starts answering (neigh.Probe). A host on the LAN
// answers within a millisecond; the wait delays a takeover by this much.
const probeWait = 100 * time.Millisecond

// probeWaitInUse is how long a probe listens when it asks again for an
// address another host answered for: that host may be another load
// balancer handing over, busy withdrawing hundreds of addresses, whose
// answers can then come later than a host's usually do. Herald takes the
// address only after it was silent for this long. A failover between
// Herald's nodes waits for it only if the previous owner still answered
// the first probe.
const probeWaitInUse = 300 * time.Millisecond

// handle gives the jobs and the metrics the responder loaded at start.
type handle struct{ r atomic.Pointer[bpf.Responder] }

func (h *handle) get() *bpf.Responder  { return h.r.Load() }
func (h *handle) set(r *bpf.Responder) { h.r.Store(r) }
