package leaseelection

import (
	"context"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// leaving is the campaign of a group this node no longer announces (its
// Services gone, or this node no longer a candidate), and the addresses
// it answered for. It keeps its Lease, renewed, until the responder has
// taken those addresses out of its maps: the node that takes the Lease
// next must never answer beside this one.
type leaving struct {
	c    *campaign
	keys []tables.L2AnnounceKey
}

// follow starts a campaign for every group new to the selection, and
// withdraws the campaigns of the groups that left it (prev is the
// selection before); a group back before its Lease was released resumes
// its campaign.
func (a *announcer) follow(ctx context.Context, prev, sel selection, campaigns map[string]*campaign, gone map[string]leaving) {
	for lease, c := range campaigns {
		if sel[lease] == nil {
			c.withdraw()
			gone[lease] = leaving{c: c, keys: prev[lease].keys()}
			delete(campaigns, lease)
		}
	}
	for lease := range sel {
		l, back := gone[lease]
		switch {
		case campaigns[lease] != nil:
		case back:
			l.c.rejoin()
			campaigns[lease] = l.c
			delete(gone, lease)
		default:
			campaigns[lease] = a.campaign(ctx, lease)
		}
	}
}

// release lets go of the Leases of the groups that left whose addresses
// the responder has taken out, and returns their campaigns, stopping.
func release(txn statedb.ReadTxn, announce statedb.Table[*tables.L2AnnounceEntry], gone map[string]leaving) []*campaign {
	var stopping []*campaign
	for lease, l := range gone {
		if withdrawing(txn, announce, l.keys) {
			continue
		}
		l.c.cancel()
		stopping = append(stopping, l.c)
		delete(gone, lease)
	}
	return stopping
}

// withdrawing reports whether the responder may still answer for one of
// the addresses as the group that left: an entry of it is withdrawn and
// not reported out yet. (An entry still answered, not withdrawn, is this
// node's under another of its Leases.)
func withdrawing(txn statedb.ReadTxn, announce statedb.Table[*tables.L2AnnounceEntry], keys []tables.L2AnnounceKey) bool {
	for _, k := range keys {
		if en, _, ok := announce.Get(txn, tables.L2AnnounceKeyIndex.Query(k)); ok && en.Withdrawn && !en.Out() {
			return true
		}
	}
	return false
}
