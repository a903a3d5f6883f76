package elector

import (
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// What the elector publishes besides its decisions: the fence deadline
// for the responder, and the members as it sees them.

// publishFence tells the responder until when it may answer.
func (e *elector) publishFence(fresh bool) {
	wtxn := e.DB.WriteTxn(e.Health)
	e.writeFence(wtxn, fresh)
	wtxn.Commit()
}

func (e *elector) writeFence(wtxn statedb.WriteTxn, fresh bool) {
	h := &tables.L2LeaseHealth{Node: e.self}
	if fresh {
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

// writeMembers copies the member rows into l2-members.
func (e *elector) writeMembers(rows []*tables.L2Member) {
	wtxn := e.DB.WriteTxn(e.Members)
	defer wtxn.Commit()
	for _, m := range rows {
		if old, _, ok := e.Members.Get(wtxn, tables.L2MemberNodeIndex.Query(m.Node)); ok && sameJSON(old, m) {
			continue
		}
		_, _, _ = e.Members.Insert(wtxn, m)
	}
}
