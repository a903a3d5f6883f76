package elector

import (
	"slices"
	"time"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// What the elector publishes besides its decisions: the fence deadline
// for the responder, and what the peers must learn of this node.

// publishFence tells the responder until when it may answer, as of now.
func (e *elector) publishFence(now time.Time) {
	e.fenceMu.Lock()
	defer e.fenceMu.Unlock()
	wtxn := e.DB.WriteTxn(e.Health)
	e.writeFence(wtxn, now)
	wtxn.Commit()
}

// writeFence writes the deadline. The caller holds fenceMu until the
// transaction is committed, so the deadlines reach the table in the order
// the fence moved, and settling with the entries it is about.
func (e *elector) writeFence(wtxn statedb.WriteTxn, now time.Time) {
	h := &tables.L2LeaseHealth{Node: e.self}
	pending := false
	for en := range e.Announce.All(wtxn) {
		if !en.Withdrawn {
			h.HeldLeases++
		}
		pending = pending || !en.Out()
	}
	// Nothing in the responder: a new term has nothing of the old one to
	// wait for, and need not wait for its first round either.
	if !pending {
		e.settling = false
	}
	if e.fence.valid(now) && !e.settling && !e.silenced {
		h.FreshUntil = e.fence.until
	}
	if old, _, ok := e.Health.Get(wtxn, tables.L2LeaseHealthNodeIndex.Query(e.self)); ok && old.FreshUntil.Equal(h.FreshUntil) && old.HeldLeases == h.HeldLeases {
		return
	}
	_, _, _ = e.Health.Insert(wtxn, h)
}

// writeMeta writes what the members cell publishes to the peers for this
// node: its term, and the groups it took over without recording it (the
// peers take none of those).
func (e *elector) writeMeta(wtxn statedb.WriteTxn, term string, took map[string]string) {
	m := &tables.L2MemberMeta{Node: e.self, Term: term}
	for g, k := range took {
		m.TookOver = append(m.TookOver, claimKey(g, k))
	}
	slices.Sort(m.TookOver)
	m.TookOver = slices.Compact(m.TookOver)
	if old, _, ok := e.Meta.Get(wtxn, tables.L2MemberMetaNodeIndex.Query(e.self)); ok && sameJSON(old, m) {
		return
	}
	_, _, _ = e.Meta.Insert(wtxn, m)
}
