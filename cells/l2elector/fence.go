package l2elector

import (
	"fmt"
	"time"
)

// fence is this node's right to answer, as one unbroken stretch of
// confirmed liveness: a term. Evidence (a peer's echo, the node's own
// Lease renewal) says until when the node may answer; evidence arriving
// while the term runs extends it, evidence arriving after it ran out starts
// a new term, under a new name. Whatever the node held in the old term is
// void: meanwhile the others may have declared it dead and taken over.
type fence struct {
	term  string
	until time.Time
	since time.Time // when the term began
	// newTerm names a term; random, so that a restarted agent never
	// reuses the name of one of its earlier terms.
	newTerm func() string
}

// advance records evidence valid until until, at now. It reports whether a
// new term started.
func (f *fence) advance(now, until time.Time) bool {
	if !until.After(now) {
		return false // stale: it expired before it was read
	}
	if f.term != "" && f.until.After(now) {
		if until.After(f.until) {
			f.until = until
		}
		return false
	}
	f.term, f.until, f.since = f.newTerm(), until, now
	return true
}

// valid reports whether the node may answer at now.
func (f *fence) valid(now time.Time) bool { return f.term != "" && now.Before(f.until) }

// standing is what this node may do, and why.
type standing struct {
	until time.Time // it may answer until then
	// mayMove: it may take groups over and hand them over; otherwise it
	// only keeps answering for what it holds.
	mayMove bool
	why     string
}

// judge decides a node's standing from the members alive in its view
// (itself included), the size of the cluster as far as it knows it, the
// deadline its peers' confirmations give and the one its own node Lease
// gives (zero: not renewed). See Documentation/l2-announcements.md, "How a
// node knows it may answer":
//   - a strict majority alive: it acts while its peers confirm it;
//   - alone in the cluster: it acts while it renews its own node Lease;
//   - no majority on either side (two nodes, or an even split): it keeps
//     what it holds while it renews its own node Lease; nobody else can
//     take it, as no majority can form without it, and no one is alone
//     while its Lease is renewed;
//   - otherwise (a minority, a majority elsewhere may take its groups): it
//     stops answering.
func judge(live, universe int, confirmed, ownLease time.Time) standing {
	switch {
	case universe <= 1:
		if ownLease.IsZero() {
			return standing{why: "alone, and this node's Lease is not renewed"}
		}
		return standing{until: ownLease, mayMove: true, why: "alone, and this node's Lease is renewed"}
	case 2*live > universe && live >= 2:
		return standing{until: confirmed, mayMove: true, why: fmt.Sprintf("%d of %d nodes alive, peers confirm this node", live, universe)}
	case 2*(universe-live) <= universe && !ownLease.IsZero():
		return standing{until: ownLease, why: fmt.Sprintf("%d of %d nodes alive: no majority on either side; keeping what this node holds while its Lease is renewed", live, universe)}
	default:
		return standing{why: fmt.Sprintf("only %d of %d nodes alive in this node's view: not a majority", live, universe)}
	}
}
