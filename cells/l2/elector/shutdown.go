package elector

import (
	"time"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/internal/withdraw"
	"github.com/heraldlb/herald/tables"
)

// shutdown stops answering, and says so in l2-member-meta (Silent): the
// members cell, which stops after the elector (cells/l2), then leaves
// the member cluster, and the peers take this node's groups over as soon
// as they learn it left, so it must be silent by then.
//
// Silent is proven one of two ways. Every entry is marked withdrawn, and
// when the responder (which stops after both) reports them all out of
// its maps (as for a handover) the node leaves at once: a `kubectl
// delete pod` or rolling upgrade costs the time the leave takes to reach
// the peers, not the rest of the fence. When the responder does not
// confirm (it stopped first, or fails), the node waits until the deadline
// it last published has passed, after which the program answers nothing
// on its own.
func (e *elector) shutdown() {
	wtxn := e.DB.WriteTxn(e.Announce, e.Health)
	withdraw.All(wtxn, e.Announce)
	// No new deadline: the program answers until the last one at most.
	_, _, _ = e.Health.Insert(wtxn, &tables.L2LeaseHealth{Node: e.self})
	wtxn.Commit()

	how := "the responder withdrew every entry"
	if !withdraw.Wait(e.DB, e.Announce, e.fence.until) {
		how = "the responder's deadline passed"
		time.Sleep(time.Until(e.fence.until))
	}
	wtxn = e.DB.WriteTxn(e.Announce, e.Meta)
	_ = e.Announce.DeleteAll(wtxn)
	markSilent(wtxn, e.Meta, e.self, how)
	wtxn.Commit()
}

// markSilent tells the members cell that this node answers for nothing
// any more, and how that is known: it may leave the members now.
func markSilent(wtxn statedb.WriteTxn, meta statedb.RWTable[*tables.L2MemberMeta], self, how string) {
	m := &tables.L2MemberMeta{Node: self}
	if old, _, ok := meta.Get(wtxn, tables.L2MemberMetaNodeIndex.Query(self)); ok {
		c := *old
		m = &c
	}
	m.Silent = how
	_, _, _ = meta.Insert(wtxn, m)
}
