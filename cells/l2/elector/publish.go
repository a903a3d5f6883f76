package elector

import (
	"slices"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// What the elector publishes besides its decisions: the fence deadline
// for the responder, and what the peers must learn of this node.

// publishFence tells the responder until when it may answer.
func (e *elector) publishFence(fresh bool) {
	wtxn := e.DB.WriteTxn(e.Health)
	e.writeFence(wtxn, fresh)
	wtxn.Commit()
}

func (e *elector) writeFence(wtxn statedb.WriteTxn, fresh bool) {
	h := &tables.L2LeaseHealth{Node: e.self}
	if fresh && !e.settling {
		h.FreshUntil = e.fence.until
	}
	for en := range e.Announce.All(wtxn) {
		if !en.Withdrawn {
			h.HeldLeases++
		}
	}
	if old, _, ok := e.Health.Get(wtxn, tables.L2LeaseHealthNodeIndex.Query(e.self)); ok && old.FreshUntil.Equal(h.FreshUntil) && old.HeldLeases == h.HeldLeases {
		return
	}
	_, _, _ = e.Health.Insert(wtxn, h)
}

// writeMeta writes what the members cell publishes to the peers for this
// node: its term, and the groups it took over without recording it (the
// peers take none of those).
func (e *elector) writeMeta(wtxn statedb.WriteTxn, took map[string]string) {
	m := &tables.L2MemberMeta{Node: e.self, Term: e.fence.term}
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
