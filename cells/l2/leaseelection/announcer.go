package leaseelection

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldlb/herald/cells/internal/tablesync"
	"github.com/heraldlb/herald/cells/internal/withdraw"
	"github.com/heraldlb/herald/cells/l2/internal/announced"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

func registerAnnouncer(p params) error {
	if !p.L2.Runs(l2config.ElectionLease) {
		return nil
	}
	if err := p.Leases.Validate(); err != nil {
		return err
	}
	a := &announcer{params: p, node: p.Agent.Node(), timings: p.Leases.Timings(),
		heldChanged: make(chan struct{}, 1), renewed: make(chan struct{}, 1),
		transitions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_l2_lease_transitions_total",
			Help: "Announcement Leases this node acquired, lost (another node wrote the Lease) or released (its Services gone, or the agent stopping).",
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
	params
	node    string
	timings tables.LeaseTimings
	// heldChanged: a term started or ended; renewed: a term's deadline
	// moved. Both wake the loop to sync.
	heldChanged chan struct{}
	renewed     chan struct{}
	transitions *prometheus.CounterVec
	held        *prometheus.GaugeVec
}

func (a *announcer) run(ctx context.Context, health cell.Health) error {
	if err := tables.WaitInitialized(ctx, a.DB, a.Candidates); err != nil {
		return nil
	}
	campaigns := map[string]*campaign{}
	gone := map[string]leaving{}
	var stopping []*campaign
	defer func() { a.stopAll(campaigns, gone, stopping) }()
	// Deadlines are checked once per retry period: a Lease that stopped
	// being renewed is withdrawn when its deadline passes. (The responder
	// falls silent at that deadline by itself, even if this loop is late.)
	freshness := time.NewTicker(a.timings.RetryPeriod)
	defer freshness.Stop()
	var (
		sel       selection
		candWatch <-chan struct{}
	)
	for {
		// The selection only changes with the candidates; a freshness tick
		// or a Lease changing hands just re-syncs what is announced.
		if sel == nil || tablesync.Closed(candWatch) {
			var cands iter.Seq2[*tables.L2Candidate, statedb.Revision]
			cands, candWatch = a.Candidates.AllWatch(a.DB.ReadTxn())
			prev := sel
			sel = selectionOf(cands)
			a.follow(ctx, prev, sel, campaigns, gone)
		}
		a.sync(sel, campaigns, gone)
		// The Leases of the groups that left go once the responder has
		// their entries out (in the background; stopAll waits for them),
		// and no longer bound the deadline.
		txn := a.DB.ReadTxn()
		if released := release(txn, a.Announce, gone); len(released) > 0 {
			stopping = append(stopping, released...)
			a.sync(sel, campaigns, gone)
		}
		stopping = slices.DeleteFunc(stopping, isDone)
		lastSync := time.Now()
		a.reportHealth(campaigns, health)
		var withdrawn <-chan struct{}
		if len(gone) > 0 {
			// As of the release's read: nothing the responder reported
			// since is missed.
			_, withdrawn = a.Announce.AllWatch(txn)
		}

		select {
		case <-ctx.Done():
			return nil
		case <-freshness.C:
		case <-candWatch:
		case <-withdrawn:
		case <-a.heldChanged:
		case <-a.renewed:
			// Renewals only move deadlines forward, and arrive one per
			// Lease and retry period: batch them, a tenth of a retry
			// period at most, which the deadlines leave room for.
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(a.timings.RetryPeriod/10 - time.Since(lastSync)):
			}
		}
	}
}

// reportHealth is Degraded while Lease API calls fail: held Leases are
// withdrawn when their deadline passes, and no Lease can be taken.
func (a *announcer) reportHealth(campaigns map[string]*campaign, health cell.Health) {
	failing := 0
	var last error
	for _, c := range campaigns {
		if err := c.lastError(); err != nil {
			failing++
			last = err
		}
	}
	if failing == 0 {
		health.OK(fmt.Sprintf("announcing, %d Lease elections", len(campaigns)))
		return
	}
	health.Degraded(fmt.Sprintf("%d of %d Lease elections failing", failing, len(campaigns)), last)
}

func isDone(c *campaign) bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stopAll gives every Lease up as the agent stops: the entries out of
// the responder first, as for a group that leaves, or the deadline last
// published passed (the program answers nothing after it on its own);
// then the Leases are released, and it waits for that a little while.
func (a *announcer) stopAll(campaigns map[string]*campaign, gone map[string]leaving, stopping []*campaign) {
	for _, c := range campaigns {
		c.withdraw()
	}
	if last := a.silence(); !withdraw.Wait(a.DB, a.Announce, last) && !last.IsZero() {
		a.Log.Info("Stopping: the responder did not confirm the entries out; waited until its deadline passed", "deadline", last)
	}
	for _, c := range campaigns {
		c.cancel()
		stopping = append(stopping, c)
	}
	for _, l := range gone {
		l.c.cancel()
		stopping = append(stopping, l.c)
	}
	deadline := time.After(a.timings.RenewDeadline + time.Second)
	for _, c := range stopping {
		select {
		case <-c.done:
		case <-deadline:
			return
		}
	}
}

// silence withdraws every entry and publishes no deadline any more; it
// returns the last one published, until which the responder may answer.
func (a *announcer) silence() time.Time {
	wtxn := a.DB.WriteTxn(a.Announce, a.Health)
	defer wtxn.Commit()
	var last time.Time
	if h, _, ok := a.Health.Get(wtxn, tables.L2LeaseHealthNodeIndex.Query(a.node)); ok {
		last = h.FreshUntil
	}
	withdraw.All(wtxn, a.Announce)
	_, _, _ = a.Health.Insert(wtxn, &tables.L2LeaseHealth{Node: a.node})
	return last
}

// sync makes l2-announce hold exactly the entries of the groups whose Lease
// this node holds and may still answer for (l2config.L2Leases.Timings), the
// others withdrawn until the responder has them out, and records in
// l2-lease-health until when the ARP responder may trust that.
func (a *announcer) sync(sel selection, campaigns map[string]*campaign, gone map[string]leaving) {
	now := time.Now()
	want := map[tables.L2AnnounceKey]*tables.L2AnnounceEntry{}
	health := &tables.L2LeaseHealth{Node: a.node}
	for lease, g := range sel {
		c := campaigns[lease]
		if c == nil {
			continue
		}
		st := c.standing(now)
		if c.announced != st.answers {
			c.announced = st.answers
			switch {
			case st.answers:
				entries := make([]*tables.L2AnnounceEntry, 0, len(g.entries))
				for _, en := range g.entries {
					entries = append(entries, en)
				}
				announced.Record(a.Events, a.node, g.lease, entries)
			case st.lapsed:
				// The responder's "Withdrawing" alone would not say why.
				a.Log.Warn("Not answering until the announcement lease is renewed: its last renewal ran out",
					"lease", g.lease, "node", a.node, "validUntil", st.validUntil)
			}
		}
		if !st.answers {
			continue
		}
		for k, e := range g.entries {
			want[k] = e
		}
		health.HeldLeases++
		if health.FreshUntil.IsZero() || st.validUntil.Before(health.FreshUntil) {
			health.FreshUntil = st.validUntil
		}
	}
	// The groups that left are answered until their entries are out, and
	// only as long as their own Lease allows.
	for _, l := range gone {
		until := l.c.standing(now).validUntil
		if !until.IsZero() && until.Before(health.FreshUntil) {
			health.FreshUntil = until
		}
	}
	wtxn := a.DB.WriteTxn(a.Announce, a.Health)
	defer wtxn.Commit()
	_, _, _ = a.Health.Insert(wtxn, health)
	for _, e := range statedb.Collect(a.Announce.All(wtxn)) {
		k := tables.L2AnnounceKey{IP: e.IP, NetworkInterface: e.NetworkInterface}
		w, wanted := want[k]
		switch {
		case wanted && sameEntry(e, w):
			delete(want, k)
		case wanted:
			// Replaced below.
		case !e.Withdrawn:
			// Out of the responder before out of the table: a group that
			// left keeps its Lease until then (leaving).
			_, _, _ = a.Announce.Insert(wtxn, e.Withdrawal())
		case e.Out():
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
	return a.Withdrawn == b.Withdrawn && a.Ifindex == b.Ifindex && a.MAC == b.MAC && slices.Equal(a.Origins, b.Origins)
}

// group is a set of Services that must be answered for by the same node:
// they share at least one IP (directly or through each other). One Lease,
// named after the group's first Service, decides the node for all of them.
type group struct {
	lease    string
	services []string // sorted Service keys
	entries  map[tables.L2AnnounceKey]*tables.L2AnnounceEntry
}

// keys are the group's addresses on their interfaces (none for nil).
func (g *group) keys() []tables.L2AnnounceKey {
	if g == nil {
		return nil
	}
	return slices.Collect(maps.Keys(g.entries))
}

// selection is what this node may announce: every group it is a candidate
// for, by Lease name.
type selection map[string]*group

// selectionOf takes the groups this node is a candidate for from the
// l2-candidates table.
func selectionOf(cands iter.Seq2[*tables.L2Candidate, statedb.Revision]) selection {
	sel := selection{}
	for c := range cands {
		if len(c.Local) == 0 {
			continue
		}
		g := &group{lease: c.Group, services: c.Services, entries: map[tables.L2AnnounceKey]*tables.L2AnnounceEntry{}}
		for _, e := range c.Local {
			g.entries[tables.L2AnnounceKey{IP: e.IP, NetworkInterface: e.NetworkInterface}] = e
		}
		sel[c.Group] = g
	}
	return sel
}
