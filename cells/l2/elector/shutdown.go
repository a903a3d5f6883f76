package elector

import (
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"

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
	withdrawAll(wtxn, e.Announce)
	// No new deadline: the program answers until the last one at most.
	_, _, _ = e.Health.Insert(wtxn, &tables.L2LeaseHealth{Node: e.self})
	wtxn.Commit()

	how := "the responder withdrew every entry"
	if !waitWithdrawn(e.DB, e.Announce, e.fence.until) {
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

// withdrawAll marks every entry withdrawn, for the responder to take out
// of its maps.
func withdrawAll(wtxn statedb.WriteTxn, announce statedb.RWTable[*tables.L2AnnounceEntry]) {
	for en := range announce.All(wtxn) {
		if en.Withdrawn {
			continue
		}
		en = en.Clone()
		en.Withdrawn = true
		en.Status = reconciler.StatusPending()
		_, _, _ = announce.Insert(wtxn, en)
	}
}

// waitWithdrawn waits until the responder reports every entry withdrawn
// (done), or until the deadline; it says whether they all were. With no
// entries at all it proves nothing (entries dropped while this node's
// liveness was unconfirmed may still be in the maps, answered until the
// deadline), and nothing waits for this node's groups then: it waits.
func waitWithdrawn(db *statedb.DB, announce statedb.Table[*tables.L2AnnounceEntry], deadline time.Time) bool {
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	for {
		entries, changed := announce.AllWatch(db.ReadTxn())
		n, out := 0, 0
		for en := range entries {
			n++
			if en.Withdrawn && en.Status.Kind == reconciler.StatusKindDone {
				out++
			}
		}
		if n > 0 && out == n {
			return true
		}
		select {
		case <-changed:
		case <-timeout.C:
			return false
		}
	}
}
