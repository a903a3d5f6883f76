package elector

import (
	"fmt"
	"time"
)

// fence is this node's right to answer, as one unbroken stretch of
// confirmed liveness: a term. Evidence (a peer's echo, the node's own
// Lease renewal) says until when the node may answer, and until when
// nobody can have taken its groups (hold, at least as late); evidence
// arriving while the term holds extends it, evidence arriving after it
// ran out starts a new term, under a new name. Whatever the node held in
// the old term is void: meanwhile the others may have declared it dead
// and taken over.
//
// What counts is the evidence, not when the elector reads it: the peers'
// confirmations come as a run without gaps (each echo sent before the one
// before it ran out), and a run that began while the term held continues
// it, however late the elector reads it (a round that took long on a busy
// node). The node was confirmed all along, so nobody declared it dead;
// only its responder fell silent meanwhile, which is safe. Without this, a
// slow elector voided its own term with every round, and every new term
// costs a round over every group.
type fence struct {
	term  string
	until time.Time // it may answer until then
	hold  time.Time // the term lasts until then
	since time.Time // when the term began
	// newTerm names a term; random, so that a restarted agent never
	// reuses the name of one of its earlier terms.
	newTerm func() string
}

// advance records evidence, read at now, that the node may answer until
// until and that nobody can take its groups before hold; since, unless
// zero, is when the unbroken run of evidence that gives until began. It
// reports whether a new term started.
func (f *fence) advance(now, until, hold, since time.Time) bool {
	if until.After(hold) {
		hold = until
	}
	if !hold.After(now) || f.extend(now, until, hold, since) {
		return false // stale: it expired before it was read; or it continues the term
	}
	f.term, f.until, f.hold, f.since = f.newTerm(), until, hold, now
	return true
}

// extend records evidence (see advance) only if it continues the current
// term: the term still holds at now, or the evidence's run began while it
// held. It reports whether it did.
func (f *fence) extend(now, until, hold, since time.Time) bool {
	if until.After(hold) {
		hold = until
	}
	if f.term == "" || !hold.After(now) || !(f.hold.After(now) || (!since.IsZero() && since.Before(f.hold))) {
		return false
	}
	if until.After(f.until) {
		f.until = until
	}
	if hold.After(f.hold) {
		f.hold = hold
	}
	return true
}

// leave starts a new term at now, with the evidence the old one had: the
// old one is void (the peers act on a takeover record of it).
func (f *fence) leave(now time.Time) {
	f.term, f.since = f.newTerm(), now
}

// valid reports whether the node may answer at now.
func (f *fence) valid(now time.Time) bool { return f.term != "" && now.Before(f.until) }

// standing is what this node may do, and why.
type standing struct {
	until time.Time // it may answer until then
	// since: when the unbroken evidence for until began (zero: no run,
	// the evidence is as of now).
	since time.Time
	// hold: nobody can take its groups before then (zero: until); it
	// keeps its term while it does not answer.
	hold time.Time
	// mayMove: it may take groups over and hand them over; otherwise it
	// only keeps answering for what it holds.
	mayMove bool
	why     string
}

// confirmation is what the peers' echoes confirm (l2-member-confirmation):
// until when this node may answer, and since when they have without a gap.
type confirmation struct{ since, until time.Time }

// witness is what the witness records of a two-node cluster tell one
// node (witness.go): until when its own record lets it answer (zero:
// never renewed), and whether the other node's record expired.
type witness struct {
	own       time.Time
	peersGone bool
}

// judge decides a node's standing from the members alive in its view
// (itself included), the size of the cluster as far as it knows it, the
// deadline its peers' confirmations give, the one its own node Lease
// gives (zero: not renewed), and, with two nodes, the witness records. See
// Documentation/l2-announcements.md, "How a node knows it may answer" and
// "Two-node clusters":
//   - a strict majority alive: it acts while its peers confirm it; with
//     two nodes it keeps its term (not answering) while its witness
//     record lets it answer, as the other takes nothing from it meanwhile:
//     the term outlasts the moment between the other failing, when
//     confirmations stop, and its being declared dead;
//   - alone in the cluster: it acts while it renews its own node Lease;
//   - one of two, the other's witness record expired: it acts, taking
//     the other's groups over, while its own witness record is renewed;
//   - one of two otherwise: it keeps what it holds while its own witness
//     record is renewed (the other takes nothing from it meanwhile);
//   - no majority on either side of a larger even split: it keeps what
//     it holds while it renews its own node Lease; nobody else can take
//     it, as no majority can form without it, and no one is alone while
//     its Lease is renewed;
//   - otherwise (a minority, a majority elsewhere may take its groups): it
//     stops answering.
func judge(live, universe int, confirmed confirmation, ownLease time.Time, w witness) standing {
	switch {
	case universe <= 1:
		if ownLease.IsZero() {
			return standing{why: "alone, and this node's Lease is not renewed"}
		}
		return standing{until: ownLease, mayMove: true, why: "alone, and this node's Lease is renewed"}
	case 2*live > universe && live >= 2:
		st := standing{until: confirmed.until, since: confirmed.since, mayMove: true, why: fmt.Sprintf("%d of %d nodes alive, peers confirm this node", live, universe)}
		// The witness holds the term, but does not extend the answers:
		// a third node joining would make a majority of two without
		// this one.
		if universe == 2 {
			st.hold = w.own
		}
		return st
	case universe == 2 && w.own.IsZero():
		return standing{why: "1 of 2 nodes alive, and this node's witness record is not renewed"}
	case universe == 2 && w.peersGone:
		return standing{until: w.own, hold: w.own, mayMove: true, why: "1 of 2 nodes alive, the other's witness record expired; acting while this node's is renewed"}
	case universe == 2:
		return standing{until: w.own, hold: w.own, why: "1 of 2 nodes alive: keeping what this node holds while its witness record is renewed"}
	case 2*(universe-live) <= universe && !ownLease.IsZero():
		return standing{until: ownLease, why: fmt.Sprintf("%d of %d nodes alive: no majority on either side; keeping what this node holds while its Lease is renewed", live, universe)}
	default:
		return standing{why: fmt.Sprintf("only %d of %d nodes alive in this node's view: not a majority", live, universe)}
	}
}
