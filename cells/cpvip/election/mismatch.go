package election

import (
	"slices"
	"time"

	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
)

// forgetMismatchAfter: a node configured differently that has not been
// heard for this long is no longer counted. Without it, the metric and
// control-plane-members kept a node that was removed, or that stopped,
// until this agent restarted. Beats arrive every 50 ms: a few seconds
// are many beats.
const forgetMismatchAfter = 3 * time.Second

// agrees reports whether the sender is configured as this node is, and
// logs and counts it when not. A sender missing from --peers counts too:
// its peers differ, and this node never sends to it, so this is the only
// place the difference can be said (the message is authenticated, so it
// comes from a node with the peer secret).
func (r *runner) agrees(m wireMessage, from string, now time.Time) bool {
	why := mismatch(m, r.vips, r.peers)
	if why == "" && !slices.ContainsFunc(r.cfg.Peers, func(q cpvipconfig.Peer) bool { return q.Name == from }) {
		// Not possible with an agent's own checks: a node is in its peers.
		r.Log.Debug("Dropped a message from a node not in --peers", "node", from)
		return false
	}
	if why != "" {
		r.mismatchAt[from] = now
		if r.mismatched[from] != why {
			r.Log.Error("A control-plane node is configured differently: it takes no part in this node's election until both agree",
				"node", from, "difference", why)
			r.mismatched[from] = why
			r.m.mismatched.Set(float64(len(r.mismatched)))
		}
		return false
	}
	if _, ok := r.mismatched[from]; ok {
		r.dropMismatch(from)
		r.Log.Info("A control-plane node agrees on the configuration again", "node", from)
	}
	return true
}

// forgetMismatches stops counting the nodes configured differently that
// are no longer heard.
func (r *runner) forgetMismatches(now time.Time) {
	for from, at := range r.mismatchAt {
		if now.Sub(at) >= forgetMismatchAfter {
			r.dropMismatch(from)
			r.Log.Info("A control-plane node configured differently is no longer heard", "node", from)
		}
	}
}

func (r *runner) dropMismatch(from string) {
	delete(r.mismatched, from)
	delete(r.mismatchAt, from)
	r.m.mismatched.Set(float64(len(r.mismatched)))
}
