package elector

import (
	"encoding/json"
	"iter"
	"slices"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/cells/l2/internal/announced"
	"github.com/heraldlb/herald/tables"
)

// A decision round: what this node knows, decided, and applied to the
// tables it writes.

// roundArgs is what a round decides on, as the turn that started it read
// it: the members, this node's standing, and its term.
type roundArgs struct {
	fresh, mayMove, apiUp bool
	term                  string
	since                 time.Time // the term's start
	rows                  []*tables.L2Member
}

// round decides and applies the outcome. It returns channels that close
// when an input of the decision changes.
func (e *elector) round(a roundArgs) []<-chan struct{} {
	txn := e.DB.ReadTxn()
	cands, candWatch := e.Candidates.AllWatch(txn)
	recs, recWatch := e.Records.PrefixWatch(txn, tables.L2LeaseNameIndex.Query(tables.L2AnnounceLeasePrefix))
	ann, annWatch := e.Announce.AllWatch(txn)
	tos, toWatch := e.Records.PrefixWatch(txn, tables.L2LeaseNameIndex.Query(tables.L2TakeoverLeasePrefix))
	inputs := []<-chan struct{}{candWatch, recWatch, annWatch, toWatch}

	v := view{self: e.self, term: a.term, fresh: a.fresh, mayMove: a.mayMove, apiUp: a.apiUp,
		members: map[string]member{}, groups: statedb.Collect(cands), records: map[string]holding{},
		took: e.took, withdrawn: map[string]bool{}, renewed: map[string]bool{}, takeovers: map[string]takeoverRecord{}}
	// Takeover records count as the table shows them, never as this
	// node's write returned them (takeover.go).
	for l := range tos {
		if l.Takeover != nil {
			v.takeovers[l.Takeover.From] = takeoverRecord{name: l.Name, version: l.ResourceVersion, owners: l.Takeover.Owners}
		}
	}
	now := time.Now()
	for _, m := range a.rows {
		e.terms.observe(m.Node, m.Term)
	}
	v.seen = e.terms.keys()
	for _, m := range a.rows {
		// A death seen before this node's term began counts only after
		// the rejoin grace: until then the member is treated as alive.
		live := m.Live() || !deathTrusted(m, a.since, now)
		v.members[m.Node] = member{live: live, term: m.Term, tookOver: m.TookOver}
	}
	if expired := e.readRecords(&v, recs, now); expired != nil {
		inputs = append(inputs, expired)
	}
	for g, o := range e.overlay {
		if cur, ok := v.records[g]; (ok && cur.version == o.fromVersion) || (!ok && o.fromVersion == "") {
			v.records[g] = o.h
		} else {
			delete(e.overlay, g)
		}
	}
	markWithdrawn(&v, ann)

	p := decide(v)
	e.took = p.took
	e.apply(v, p)
	e.collect(v)
	for _, w := range p.records {
		e.sendRecord(w)
	}
	for _, w := range p.writes {
		w.transitions, w.acquired = v.records[w.group].handedTo(w.holder)
		if w.acquired.IsZero() {
			w.acquired = time.Now()
		}
		e.send(w, false)
	}
	return inputs
}

// readRecords puts the group Leases into the view and forgets the ones
// that are gone. It returns a channel closed when the first renewed Lease
// has not been renewed for its duration (it may be taken then, so the
// elector decides again), or nil.
func (e *elector) readRecords(v *view, recs iter.Seq2[*tables.L2Lease, statedb.Revision], now time.Time) <-chan struct{} {
	var renewedUntil time.Time
	present := map[string]bool{}
	for l := range recs {
		present[l.Name] = true
		_, member := v.members[l.Holder]
		renewed, until := e.observeRecord(l, now, e.timings.Duration, member)
		if renewed && (renewedUntil.IsZero() || until.Before(renewedUntil)) {
			renewedUntil = until
		}
		v.records[l.Name] = holding{holder: l.Holder, term: l.Term, version: l.ResourceVersion, transitions: l.Transitions, acquired: l.AcquireTime}
		if renewed {
			v.renewed[l.Name] = true
		}
	}
	for name := range e.records {
		if !present[name] {
			delete(e.records, name)
		}
	}
	if renewedUntil.IsZero() {
		return nil
	}
	expired := make(chan struct{})
	time.AfterFunc(time.Until(renewedUntil), func() { close(expired) })
	return expired
}

// markWithdrawn marks the groups whose entries are out of the responder:
// every one of them marked withdrawn, and the responder reports it done.
func markWithdrawn(v *view, ann iter.Seq2[*tables.L2AnnounceEntry, statedb.Revision]) {
	groupOf := map[tables.L2AnnounceKey]string{}
	for _, c := range v.groups {
		for _, l := range c.Local {
			groupOf[tables.L2AnnounceKey{IP: l.IP, NetworkInterface: l.NetworkInterface}] = c.Group
		}
	}
	pending := map[string]bool{}
	for a := range ann {
		if !a.Out() {
			pending[groupOf[tables.L2AnnounceKey{IP: a.IP, NetworkInterface: a.NetworkInterface}]] = true
		}
	}
	for _, c := range v.groups {
		if !pending[c.Group] {
			v.withdrawn[c.Group] = true
		}
	}
}

// wanted turns the plan into the responder's entries and the l2-owners
// rows, and records an Event for each group this node starts to answer.
func (e *elector) wanted(v view, p plan) (map[tables.L2AnnounceKey]*tables.L2AnnounceEntry, []*tables.L2Owner) {
	want := map[tables.L2AnnounceKey]*tables.L2AnnounceEntry{}
	owners := make([]*tables.L2Owner, 0, len(v.groups))
	held := 0
	for _, c := range v.groups {
		d := p.decisions[c.Group]
		rec := p.holdings[c.Group]
		o := &tables.L2Owner{Group: c.Group, IPs: c.IPs, Owner: d.owner, Announced: d.announce, Why: d.why}
		if rec.holder != "" {
			o.Holder = rec.key()
		}
		owners = append(owners, o)
		if d.announce || d.withdraw {
			for _, l := range c.Local {
				en := l.Clone()
				en.Withdrawn = d.withdraw
				want[tables.L2AnnounceKey{IP: en.IP, NetworkInterface: en.NetworkInterface}] = en
			}
		}
		if d.announce {
			held++
			if !e.announced[c.Group] {
				announced.Record(e.Events, e.self, c.Group, c.Local)
			}
		}
		e.announced[c.Group] = d.announce
	}
	for g := range e.announced {
		if _, ok := p.decisions[g]; !ok {
			delete(e.announced, g)
		}
	}
	e.metrics.held.Set(float64(held))
	return want, owners
}

// apply makes l2-announce, l2-owners and l2-member-meta match the plan.
func (e *elector) apply(v view, p plan) {
	want, owners := e.wanted(v, p)

	// fenceMu before the tables, as publishFence: settling and the
	// deadline go out with the entries.
	e.fenceMu.Lock()
	defer e.fenceMu.Unlock()
	wtxn := e.DB.WriteTxn(e.Announce, e.Owners, e.Health, e.Meta)
	stale := false
	for en := range e.Announce.All(wtxn) {
		k := tables.L2AnnounceKey{IP: en.IP, NetworkInterface: en.NetworkInterface}
		if w, ok := want[k]; ok && en.Ifindex == w.Ifindex && en.MAC == w.MAC && en.Withdrawn == w.Withdrawn && slices.Equal(en.Origins, w.Origins) {
			delete(want, k)
			continue
		}
		if _, ok := want[k]; ok {
			continue
		}
		// What no group wants goes out of the responder before it goes out
		// of the table: writeFence counts it as pending until then, so a
		// new term's deadline never covers an entry the responder still
		// holds (see settling).
		if !en.Out() {
			stale = stale || e.settling
			if !en.Withdrawn {
				_, _, _ = e.Announce.Insert(wtxn, en.Withdrawal())
			}
			continue
		}
		_, _, _ = e.Announce.Delete(wtxn, en)
	}
	e.settling = stale
	for _, en := range want {
		en.Status = reconciler.StatusPending()
		_, _, _ = e.Announce.Insert(wtxn, en)
	}
	keep := map[string]bool{}
	for _, o := range owners {
		keep[o.Group] = true
		if old, _, ok := e.Owners.Get(wtxn, tables.L2OwnerGroupIndex.Query(o.Group)); ok && old.Same(o) {
			continue
		}
		_, _, _ = e.Owners.Insert(wtxn, o)
	}
	for o := range e.Owners.All(wtxn) {
		if !keep[o.Group] {
			_, _, _ = e.Owners.Delete(wtxn, o)
		}
	}
	// In the same transaction as the entries: the responder never sees
	// entries without the deadline they are answered under, and the
	// members cell publishes the takeovers as soon as they are answered.
	e.writeFence(wtxn, time.Now())
	e.writeMeta(wtxn, v.term, p.took)
	wtxn.Commit()
}

// recordAnnounced tells a group's Services, in an Event, which node now
// answers for their IPs and where.
func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
