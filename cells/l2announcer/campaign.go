package l2announcer

import (
	"context"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// campaign is this node's participation in the election of one Lease.
type campaign struct {
	cancel context.CancelFunc
	done   chan struct{}

	// announced is what sync last saw; only the announcer loop uses it.
	announced bool

	mu        sync.Mutex
	held      bool
	withdrawn bool
	lastRenew time.Time // last successful acquire or renew by this node
}

// heldAndFresh reports whether this node holds the Lease and renewed it
// recently enough (within maxAge) to trust that it still does.
func (c *campaign) heldAndFresh(now time.Time, maxAge time.Duration) (held bool, lastRenew time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.held || c.withdrawn || now.Sub(c.lastRenew) > maxAge {
		return false, c.lastRenew
	}
	return true, c.lastRenew
}

// withdraw stops announcing before the Lease is released, so that the
// entries are gone before another node can take the Lease.
func (c *campaign) withdraw() {
	c.mu.Lock()
	c.withdrawn = true
	c.mu.Unlock()
}

func (c *campaign) renewed() {
	c.mu.Lock()
	c.lastRenew = time.Now()
	c.mu.Unlock()
}

// campaign competes for a Lease until cancelled (again after losing it),
// and releases it when cancelled.
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
			// client-go starts OnStartedLeading in a goroutine of its own: it
			// may run after OnStoppedLeading of the same term. stopped makes
			// a late start a no-op.
			stopped := false
			le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
				Lock: &renewTracker{
					Interface: &resourcelock.LeaseLock{
						LeaseMeta:  metav1.ObjectMeta{Name: lease, Namespace: a.Agent.K8sNamespace},
						Client:     a.Kube.CoordinationV1(),
						LockConfig: resourcelock.ResourceLockConfig{Identity: a.node},
					},
					onRenew: c.renewed,
				},
				LeaseDuration:   a.Leases.L2AnnouncementsLeaseDuration,
				RenewDeadline:   a.Leases.L2AnnouncementsRenewDeadline,
				RetryPeriod:     a.Leases.L2AnnouncementsRetryPeriod,
				ReleaseOnCancel: true,
				Name:            lease,
				Callbacks: leaderelection.LeaderCallbacks{
					OnStartedLeading: func(lctx context.Context) {
						c.mu.Lock()
						if stopped || lctx.Err() != nil {
							c.mu.Unlock()
							return
						}
						c.held = true
						c.mu.Unlock()
						a.Log.Info("Acquired announcement lease", "lease", lease, "node", a.node)
						a.transitions.WithLabelValues(a.node, "acquired").Inc()
						a.held.WithLabelValues(a.node).Inc()
						notify()
					},
					OnStoppedLeading: func() {
						c.mu.Lock()
						stopped = true
						wasHeld := c.held
						c.held = false
						c.mu.Unlock()
						if wasHeld {
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

// renewTracker notes every successful acquire or renew of this node: the
// freshness of the node's announcements is measured from them.
type renewTracker struct {
	resourcelock.Interface
	onRenew func()
}

func (r *renewTracker) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := r.Interface.Create(ctx, rec)
	if err == nil && rec.HolderIdentity == r.Identity() {
		r.onRenew()
	}
	return err
}

func (r *renewTracker) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := r.Interface.Update(ctx, rec)
	if err == nil && rec.HolderIdentity == r.Identity() {
		r.onRenew()
	}
	return err
}
