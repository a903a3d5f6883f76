package leaseelection

import (
	"context"
	"sync"
	"time"

	"github.com/heraldlb/herald/cells/internal/lease"
)

// campaign is this node's participation in the election of one Lease: a
// goroutine runs its elector, the announcer loop reads its standing.
type campaign struct {
	cancel context.CancelFunc
	done   chan struct{}

	// announced is what sync last saw; only the announcer loop uses it.
	announced bool

	mu         sync.Mutex
	leading    bool
	withdrawn  bool
	validUntil time.Time // see l2config.L2Leases.Timings
	failing    error     // the last Lease API call failed with this
}

// standing is this node's position in one Lease's election at an instant.
type standing struct {
	// answers: this node holds the Lease and may still answer for it.
	answers bool
	// lapsed: this node holds the Lease but its last renewal has run out
	// (answered late, or not yet): it does not answer until a renewal
	// lands, and keeps the Lease.
	lapsed     bool
	validUntil time.Time
}

// standing reports this node's standing in the election at now.
func (c *campaign) standing(now time.Time) standing {
	c.mu.Lock()
	defer c.mu.Unlock()
	holds := c.leading && !c.withdrawn
	fresh := now.Before(c.validUntil)
	return standing{answers: holds && fresh, lapsed: holds && !fresh, validUntil: c.validUntil}
}

// withdraw stops announcing before the Lease is released: the Lease goes
// only once the responder reports the entries out (leaving), so that
// another node that takes it never answers beside this one.
func (c *campaign) withdraw() {
	c.mu.Lock()
	c.withdrawn = true
	c.mu.Unlock()
}

// rejoin undoes withdraw: the group came back to this node before its
// Lease was released.
func (c *campaign) rejoin() {
	c.mu.Lock()
	c.withdrawn = false
	c.mu.Unlock()
}

func (c *campaign) lastError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failing
}

// set publishes the elector's standing to the announcer; it reports
// whether a term started or ended, and whether API calls started or
// stopped failing.
func (c *campaign) set(e *lease.Elector, err error) (started, ended, failing, recovered bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	started, ended = e.Leading() && !c.leading, !e.Leading() && c.leading
	failing, recovered = err != nil && c.failing == nil, err == nil && c.failing != nil
	c.leading, c.validUntil, c.failing = e.Leading(), e.ValidUntil(), err
	return started, ended, failing, recovered
}

// campaign competes for a Lease until cancelled (again after losing it),
// and releases it when cancelled. A follower reads the Lease once per retry
// period, as client-go's elector does; the holder renews once per retry
// period. The rules that keep two nodes from holding the Lease at once are
// the elector's (cells/internal/lease).
func (a *announcer) campaign(ctx context.Context, name string) *campaign {
	cctx, cancel := context.WithCancel(ctx)
	c := &campaign{cancel: cancel, done: make(chan struct{})}
	api := lease.NewKube(a.Kube.CoordinationV1().Leases(a.Agent.K8sNamespace), name)
	e := lease.NewElector(name, a.node, a.timings, api, time.Now)
	go func() {
		defer close(c.done)
		tick := time.NewTicker(a.timings.RetryPeriod)
		defer tick.Stop()
		for {
			var err error
			if e.Leading() {
				err = e.Renew(cctx)
			} else {
				_, err = e.TryAcquire(cctx)
			}
			if cctx.Err() != nil {
				a.release(c, e)
				return
			}
			a.update(c, e, err)
			select {
			case <-cctx.Done():
				a.release(c, e)
				return
			case <-tick.C:
			}
		}
	}()
	return c
}

// update publishes one elector step, logs and counts a term's start and
// end, and wakes the announcer when something changed that it acts on.
func (a *announcer) update(c *campaign, e *lease.Elector, err error) {
	started, ended, failing, recovered := c.set(e, err)
	name := e.State().Lease
	switch {
	case ended:
		// Logged below.
	case failing:
		// Once per streak; the announcer's health counts the failing ones.
		a.Log.Warn("Announcement lease API call failed; this node answers until its deadline, then waits", "lease", name, "node", a.node, "error", err)
	case recovered:
		a.Log.Info("Announcement lease API calls succeed again", "lease", name, "node", a.node)
	}
	switch {
	case started:
		a.Log.Info("Acquired announcement lease", "lease", name, "node", a.node, "term", e.Term())
		a.transitions.WithLabelValues(a.node, "acquired").Inc()
		a.held.WithLabelValues(a.node).Inc()
	case ended:
		a.Log.Warn("Lost announcement lease: another node wrote it", "lease", name, "node", a.node, "term", e.Term(), "error", err)
		a.transitions.WithLabelValues(a.node, "lost").Inc()
		a.held.WithLabelValues(a.node).Dec()
	}
	switch {
	case started || ended:
		a.wake(a.heldChanged)
	case e.Leading() && err == nil:
		a.wake(a.renewed) // the deadline moved
	}
}

// release ends the term and frees the Lease, unless someone may have taken
// it already: the elector writes only the version it wrote last, and only
// while its term is valid.
func (a *announcer) release(c *campaign, e *lease.Elector) {
	wasLeading, term := e.Leading(), e.Term()
	ctx, cancel := context.WithTimeout(context.Background(), a.timings.RenewDeadline)
	defer cancel()
	err := e.Release(ctx, func() { _, _, _, _ = c.set(e, nil) })
	if !wasLeading {
		return
	}
	a.transitions.WithLabelValues(a.node, "released").Inc()
	a.held.WithLabelValues(a.node).Dec()
	if err != nil {
		a.Log.Warn("Could not release announcement lease; the others take over when it expires", "lease", e.State().Lease, "term", term, "error", err)
		return
	}
	a.Log.Info("Released announcement lease", "lease", e.State().Lease, "node", a.node, "term", term)
}

func (a *announcer) wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
