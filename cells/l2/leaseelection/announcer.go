package leaseelection

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/heraldlb/herald/cells/internal/tablesync"
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
	var stopping []*campaign
	defer func() { a.stopAll(campaigns, stopping) }()
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
			sel = selectionOf(cands)
		}

		var leaving []*campaign
		for lease, c := range campaigns {
			if sel[lease] == nil {
				c.withdraw()
				leaving = append(leaving, c)
				delete(campaigns, lease)
			}
		}
		for lease := range sel {
			if campaigns[lease] == nil {
				campaigns[lease] = a.campaign(ctx, lease)
			}
		}
		a.sync(sel, campaigns)
		lastSync := time.Now()
		a.reportHealth(campaigns, health)
		// Only now that their entries are gone: release the Leases (in the
		// background; stopAll waits for them at shutdown).
		for _, c := range leaving {
			c.cancel()
		}
		stopping = append(slices.DeleteFunc(stopping, isDone), leaving...)

		select {
		case <-ctx.Done():
			return nil
		case <-freshness.C:
		case <-candWatch:
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

func (a *announcer) stopAll(campaigns map[string]*campaign, stopping []*campaign) {
	for _, c := range campaigns {
		c.withdraw()
		c.cancel()
		stopping = append(stopping, c)
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

// sync makes l2-announce hold exactly the entries of the groups whose Lease
// this node holds and may still answer for (l2config.L2Leases.Timings), and records
// in l2-lease-health until when the ARP responder may trust that.
func (a *announcer) sync(sel selection, campaigns map[string]*campaign) {
	now := time.Now()
	want := map[tables.L2AnnounceKey]*tables.L2AnnounceEntry{}
	health := &tables.L2LeaseHealth{Node: a.node}
	for lease, g := range sel {
		c := campaigns[lease]
		if c == nil {
			continue
		}
		held, validUntil := c.heldAndFresh(now)
		if c.announced != held {
			c.announced = held
			if held {
				entries := make([]*tables.L2AnnounceEntry, 0, len(g.entries))
				for _, en := range g.entries {
					entries = append(entries, en)
				}
				announced.Record(a.Events, a.node, g.lease, entries)
			}
		}
		if !held {
			continue
		}
		for k, e := range g.entries {
			want[k] = e
		}
		health.HeldLeases++
		if health.FreshUntil.IsZero() || validUntil.Before(health.FreshUntil) {
			health.FreshUntil = validUntil
		}
	}
	wtxn := a.DB.WriteTxn(a.Announce, a.Health)
	defer wtxn.Commit()
	_, _, _ = a.Health.Insert(wtxn, health)
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

// group is a set of Services that must be answered for by the same node:
// they share at least one IP (directly or through each other). One Lease,
// named after the group's first Service, decides the node for all of them.
type group struct {
	lease    string
	services []string // sorted Service keys
	entries  map[tables.L2AnnounceKey]*tables.L2AnnounceEntry
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
