// Package withdraw takes this node's addresses out of the L2 responder
// before anything else may answer for them, for either election of L2
// announcements and for the control-plane VIP: an entry of l2-announce is
// marked withdrawn, the responder reports it out of its maps, and only
// then is its ownership given up.
package withdraw

import (
	"time"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// All marks every entry withdrawn, for the responder to take out of its
// maps.
func All(wtxn statedb.WriteTxn, announce statedb.RWTable[*tables.L2AnnounceEntry]) {
	for en := range announce.All(wtxn) {
		if !en.Withdrawn {
			_, _, _ = announce.Insert(wtxn, en.Withdrawal())
		}
	}
}

// Wait waits until the responder reports every entry out of its maps, or
// until the deadline; it says whether they all were. With no entries at
// all it proves nothing (entries dropped while this node's standing was
// unconfirmed may still be in the maps, answered until the deadline),
// and it waits.
func Wait(db *statedb.DB, announce statedb.Table[*tables.L2AnnounceEntry], deadline time.Time) bool {
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	for {
		entries, changed := announce.AllWatch(db.ReadTxn())
		n, out := 0, 0
		for en := range entries {
			n++
			if en.Out() {
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
