package elector

import (
	"context"
	"errors"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/internal/tablesync"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

// The decision loop. Two things run at different speeds: the fence,
// judged from the peers' confirmations about every echo interval and
// cheap, and the rounds, which decide over every group and may take a
// second on a starved node with a thousand groups. A round runs on its own
// goroutine, so that the deadline keeps going out to the responder
// meanwhile; were it to wait for the round, the node would fall silent for
// as long, although the peers confirm it throughout.
//
// A round decides for the term it began in, so the term does not change
// while one runs: evidence then only extends it (keepTerm). Evidence that
// ends it waits for the round's end, and meanwhile stops the answers at
// once: a lapse by the fence's own deadline, a takeover record naming the
// term by silencing the node. Everything else the elector keeps (the
// Leases seen, the writes in flight, the overlay) belongs to the round
// while it runs: write results are taken in between rounds.

func (e *elector) run(ctx context.Context, health cell.Health) error {
	// l2-members is initialized once the member protocol runs: before,
	// this node has no address or no peer secret, and takes no part.
	if err := tables.WaitInitialized(ctx, e.DB, e.Candidates, e.Records, e.Members); err != nil {
		return nil
	}
	defer e.shutdown()

	// The loop wakes when the members change, when a peer's confirmation
	// moves the deadline (about every echoInterval), when a round or a
	// Lease write finishes, and at least every echoInterval: the fence
	// and the Leases' expiry move with time alone.
	tick := time.NewTicker(l2config.EchoInterval)
	defer tick.Stop()
	var (
		last    lastTurn
		decided chan []<-chan struct{} // the round running, if any
	)
	for {
		var watches memberWatches
		results := e.results
		if decided != nil {
			watches = e.keepTerm(time.Now(), &last, health)
			results = nil
		} else if next, w := e.turn(time.Now(), &last, health); next != nil {
			watches, results = w, nil
			out := make(chan []<-chan struct{}, 1)
			go func() {
				start := time.Now()
				inputs := e.round(*next)
				e.metrics.rounds.Observe(time.Since(start).Seconds())
				out <- inputs
			}()
			decided = out
		} else {
			watches = w
		}
		select {
		case <-ctx.Done():
			if decided != nil {
				<-decided
			}
			return nil
		case <-tick.C:
		case <-watches.members:
		case <-watches.confirmation:
		case last.inputs = <-decided:
			decided = nil
		case r := <-results:
			e.handleResult(r)
			last.writesLanded = true
		}
	}
}

// lastTurn is what the loop keeps from one turn to the next, to decide
// again only when an input of the decision changed.
type lastTurn struct {
	fresh, mayMove, grace bool
	term                  string
	members               statedb.Revision
	inputs                []<-chan struct{} // of the last round
	writesLanded          bool
	// answering: what the health reports last said.
	answering bool
}

// memberWatches close when the members cell writes its tables.
type memberWatches struct {
	members, confirmation <-chan struct{}
}

// evidenceRead is what a turn reads of the members cell at now.
type evidenceRead struct {
	txn     statedb.ReadTxn
	rows    []*tables.L2Member
	version statedb.Revision
	st      standing
	watches memberWatches
}

func (e *elector) readEvidence(now time.Time) evidenceRead {
	txn := e.DB.ReadTxn()
	all, membersWatch := e.Members.AllWatch(txn)
	r := evidenceRead{txn: txn, rows: statedb.Collect(all), version: e.Members.Revision(txn)}
	// The confirmation as last written: a stale read is an earlier
	// deadline, never a later one (tables.L2MemberConfirmation).
	var confirmed confirmation
	conf, _, confWatch, ok := e.Confirmation.GetWatch(txn, tables.L2MemberConfirmationNodeIndex.Query(e.self))
	if ok {
		confirmed = confirmation{since: conf.ConfirmedSince, until: conf.ConfirmedUntil}
	}
	r.st = e.evidence(now, txn, r.rows, confirmed)
	r.watches = memberWatches{members: membersWatch, confirmation: confWatch}
	return r
}

// turn reads what the members cell says at now, judges this node's
// standing, moves the fence and publishes it. It returns what to decide
// on when an input of the decision changed (echoes only move the fence),
// or nil.
func (e *elector) turn(now time.Time, last *lastTurn, health cell.Health) (*roundArgs, memberWatches) {
	in := e.readEvidence(now)
	e.fenceMu.Lock()
	if e.fence.advance(now, in.st.until, in.st.hold, in.st.since) {
		e.Log.Info("Liveness confirmed: new term; holdings of earlier terms are void", "term", e.fence.term, "evidence", in.st.why)
		e.newTerm()
	}
	if e.silenced || e.termRecorded(in.txn) {
		// The peers judged this term ended and move its groups by that
		// record: a term never resumes once left, so this node leaves it
		// too. (Peers write such a record only for a term that they saw
		// end, or of a node they saw die: the fence ended it here before.)
		// silenced: a record seen while a round ran.
		old := e.fence.term
		e.fence.leave(now)
		e.Log.Warn("A takeover record names this node's term: new term; holdings of earlier terms are void", "ended", old, "term", e.fence.term)
		e.newTerm()
	}
	fresh, term, since := e.fence.valid(now), e.fence.term, e.fence.since
	e.fenceMu.Unlock()
	e.reportHealth(fresh, term, in.st.why, last, health)
	last.writesLanded = e.drainResults() || last.writesLanded
	// In a new term nothing is published until the old term's entries
	// are out (writeFence).
	e.publishFence(now)
	grace := inRejoinGrace(in.rows, since, now)
	var next *roundArgs
	if last.inputs == nil || tablesync.Closed(last.inputs...) || fresh != last.fresh || term != last.term || in.version != last.members || last.writesLanded ||
		in.st.mayMove != last.mayMove || grace != last.grace {
		next = &roundArgs{fresh: fresh, mayMove: in.st.mayMove, apiUp: e.apiUp(now), term: term, since: since, rows: in.rows}
		last.writesLanded = false
	}
	last.fresh, last.term, last.members, last.mayMove, last.grace = fresh, term, in.version, in.st.mayMove, grace
	return next, in.watches
}

// keepTerm is a turn while a round runs: the evidence extends the term
// the round decides for, and the deadline goes out; anything else waits
// for the next turn.
func (e *elector) keepTerm(now time.Time, last *lastTurn, health cell.Health) memberWatches {
	in := e.readEvidence(now)
	e.fenceMu.Lock()
	e.fence.extend(now, in.st.until, in.st.hold, in.st.since)
	if e.termRecorded(in.txn) {
		e.silenced = true
	}
	answering, term := e.fence.valid(now) && !e.silenced, e.fence.term
	e.fenceMu.Unlock()
	e.reportHealth(answering, term, in.st.why, last, health)
	e.publishFence(now)
	return in.watches
}

// reportHealth tells the health reports, and the log, when the node
// starts or stops answering.
func (e *elector) reportHealth(answering bool, term, why string, last *lastTurn, health cell.Health) {
	if answering == last.answering {
		return
	}
	last.answering = answering
	if answering {
		health.OK("liveness confirmed: " + why)
		return
	}
	e.Log.Warn("Liveness not confirmed: not answering", "term", term, "why", why)
	health.Degraded("not answering", errors.New(why))
}

// newTerm voids what the old term held: its entries go out of the
// responder before the new term's deadline is published (settling), and
// its unrecorded takeovers are forgotten. Called with fenceMu held,
// between rounds.
func (e *elector) newTerm() {
	e.settling, e.silenced = true, false
	e.metrics.terms.Inc()
	e.took = map[string]string{}
}

// termRecorded reports whether a takeover record of this node's current
// term exists.
func (e *elector) termRecorded(txn statedb.ReadTxn) bool {
	if e.fence.term == "" {
		return false
	}
	_, _, ok := e.Records.Get(txn, tables.L2LeaseNameIndex.Query(tables.L2TakeoverLeaseName(e.self, e.fence.term)))
	return ok
}
