package elector

import (
	"context"
	"errors"
	"time"

	"github.com/heraldlb/herald/tables"
)

// Lease writes of the members election: sent in the background, a few at
// a time, their results read back by the decision loop; and what the
// Leases it reads tell.

// maxWritesInFlight bounds the concurrent Lease writes: a thousand groups
// changing hands at once queue here rather than time out in the client's
// rate limiter (a timeout would count as the API server being down).
const maxWritesInFlight = 8

type seenRecord struct {
	version, holder, term string
	renewedAt             time.Time
	since                 time.Time // first seen by this agent
}

// observeRecord notes a version of an announcement Lease, seen at now, and
// reports whether an agent of the Lease election may hold it: it was
// renewed within its duration (d at least), i.e. written again with the
// same holder and term, which this election never does (it writes a Lease
// when the group changes hands, or terms); or this agent has not watched
// it for that long yet and its holder is no member it knows. The second
// result is when that stops being true.
func (e *elector) observeRecord(l *tables.L2Lease, now time.Time, d time.Duration, member bool) (bool, time.Time) {
	s, ok := e.records[l.Name]
	if !ok || s.version != l.ResourceVersion {
		next := seenRecord{version: l.ResourceVersion, holder: l.Holder, term: l.Term, since: now}
		if ok {
			next.since = s.since
			if l.Holder != "" && s.holder == l.Holder && s.term == l.Term {
				next.renewedAt = now
			}
		}
		s = next
		e.records[l.Name] = s
	}
	d = max(d, time.Duration(l.DurationSeconds)*time.Second)
	var until time.Time
	if !s.renewedAt.IsZero() {
		until = s.renewedAt.Add(d)
	}
	if l.Holder != "" && !member && s.since.Add(d).After(until) {
		until = s.since.Add(d)
	}
	if !until.After(now) {
		return false, time.Time{}
	}
	return true, until
}

type overlay struct {
	fromVersion string
	h           holding
}

type writeResult struct {
	w       write
	deleted bool
	record  *recordWrite // a takeover record's write
	version string
	err     error
}

// collect deletes the Leases of groups that are gone (their Services
// deleted, unannounced or without IPs): the holder does, or the first
// live member if the holder is gone.
func (e *elector) collect(v view) {
	if !v.apiUp || !v.fresh {
		return
	}
	if ok, _ := e.Candidates.Initialized(e.DB.ReadTxn()); !ok {
		return
	}
	exists := map[string]bool{}
	for _, c := range v.groups {
		exists[c.Group] = true
	}
	first := ""
	for n, m := range v.members {
		if m.live && (first == "" || n < first) {
			first = n
		}
	}
	if first == e.self {
		for from, t := range v.unreferenced() {
			e.send(write{group: t.name, fromVersion: t.version, why: "no Lease names " + from + " any more"}, true)
		}
	}
	for g, rec := range v.records {
		if exists[g] {
			continue
		}
		holderLive := rec.holder != "" && v.members[rec.holder].live
		if rec.holder == e.self || (!holderLive && first == e.self) {
			e.send(write{group: g, fromVersion: rec.version, why: "its Services are gone"}, true)
		}
	}
}

// send starts a Lease write (or delete) unless one is under way for the
// group. Writes run concurrently, limited by the client's rate limiter.
func (e *elector) send(w write, del bool) {
	if e.inflight[w.group] {
		return
	}
	e.inflight[w.group] = true
	go func() {
		e.writing <- struct{}{}
		defer func() { <-e.writing }()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r := writeResult{w: w, deleted: del}
		if del {
			r.err = deleteRecord(ctx, e.leases, w.group, w.fromVersion)
		} else {
			r.version, r.err = writeRecord(ctx, e.leases, w, e.timings.Duration)
		}
		e.results <- r
	}()
}

// sendRecord starts the write of a takeover record unless one is under
// way for it. These do not queue behind the Lease writes: one record
// moves every group of a dead node.
func (e *elector) sendRecord(w *recordWrite) {
	key := tables.L2TakeoverLeasePrefix + w.from
	if e.inflight[key] {
		return
	}
	e.inflight[key] = true
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		r := writeResult{w: write{group: key}, record: w}
		r.version, r.err = writeTakeover(ctx, e.recordLeases, w, e.timings.Duration)
		e.results <- r
	}()
}

// drainResults takes the finished writes in; it reports whether there
// were any.
func (e *elector) drainResults() bool {
	any := false
	for {
		select {
		case r := <-e.results:
			any = true
			e.handleResult(r)
		default:
			return any
		}
	}
}

// handleResult takes a finished write in.
func (e *elector) handleResult(r writeResult) {
	delete(e.inflight, r.w.group)
	switch {
	case r.record != nil && r.err == nil:
		// No overlay: the record counts once the table shows it.
		e.metrics.writes.WithLabelValues("takeover-record").Inc()
		e.Log.Info("Takeover record written", "from", r.record.from, "groups", len(r.record.owners), "added", r.record.added)
	case r.record != nil && errors.Is(r.err, errConflict):
		e.metrics.writes.WithLabelValues("conflict").Inc()
	case r.record != nil:
		e.lastFail = time.Now()
		e.metrics.writes.WithLabelValues("failed").Inc()
		e.Log.Warn("Takeover record write failed", "from", r.record.from, "error", r.err)
	case r.err == nil && !r.deleted:
		e.overlay[r.w.group] = overlay{fromVersion: r.w.fromVersion,
			h: holding{holder: r.w.holder, term: r.w.term, version: r.version, transitions: r.w.transitions, acquired: r.w.acquired}}
		e.metrics.writes.WithLabelValues("written").Inc()
		e.Log.Info("Announcement lease written", "lease", r.w.group, "holder", r.w.holder, "term", r.w.term, "why", r.w.why)
	case r.err == nil:
		e.metrics.writes.WithLabelValues("deleted").Inc()
		e.Log.Info("Deleted a Lease", "lease", r.w.group, "why", r.w.why)
	case errors.Is(r.err, errConflict):
		e.metrics.writes.WithLabelValues("conflict").Inc()
	default:
		e.lastFail = time.Now()
		e.metrics.writes.WithLabelValues("failed").Inc()
		e.Log.Warn("Announcement lease write failed", "lease", r.w.group, "error", r.err)
	}
}

// apiUp: Lease writes are worth trying. The watch delivers (the nodes'
// Lease renewals come back through it) and no write failed lately.
func (e *elector) apiUp(now time.Time) bool {
	live := false
	for _, s := range e.seen {
		live = live || now.Sub(s.at) < 2*e.timings.RetryPeriod+time.Second
	}
	return live && now.Sub(e.lastFail) > 2*time.Second
}
