package election

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldlb/herald/tables"
)

// record is what the elector knows of the Lease object.
type record struct {
	Holder      string
	Duration    time.Duration
	Transitions int32
	AcquireTime time.Time
	RenewTime   time.Time

	// version is the Lease's resourceVersion: every write is conditional
	// on it, so a write succeeds only if nobody wrote in between.
	version string
	// obj is the API object the record came from, so that an update keeps
	// every field Herald does not manage.
	obj any
}

// errConflict: the Lease changed (or appeared, or vanished) since it was
// read; the write did not happen.
var errConflict = errors.New("the Lease changed since it was read")

// leaseAPI is the Lease as the elector sees it; leaseapi.go implements it
// on the Kubernetes API.
type leaseAPI interface {
	// Get returns the Lease, or nil if it does not exist.
	Get(ctx context.Context) (*record, error)
	// Create creates the Lease; errConflict if it exists.
	Create(ctx context.Context, r record) (*record, error)
	// Update writes r if the Lease is still at r.version; errConflict if not.
	Update(ctx context.Context, r record) (*record, error)
}

// elector is one agent's campaign for one Lease: the decisions, without the
// waiting (run.go). Times come from now; the monotonic clock is what makes
// the deadlines safe across pauses.
//
// The rules, which together keep two agents from leading at once:
//   - A renewal counts from when it was sent, never from when its answer
//     was read: a pause between the two cannot stretch the term.
//   - The leader acts until send time + RenewDeadline; the others wait
//     Duration after they last saw the Lease change (which is after it was
//     sent) before taking it over. The difference is the margin in which a
//     write checked just before the deadline still lands first.
//   - Every write of the Lease is conditional on the resourceVersion last
//     read or written: a stale process cannot renew, take or release a
//     Lease that someone else wrote meanwhile.
//   - A term ends for good at the first sign that someone else wrote the
//     Lease; a new term always starts from a fresh read of the cluster.
type elector struct {
	lease    string
	identity string
	timings  tables.LeaseTimings
	api      leaseAPI
	now      func() time.Time

	// seen is the latest version of the Lease seen (read, watched or
	// written), seenAt when that version was first seen.
	seen   *record
	seenAt time.Time
	// retryAt delays the next attempt after a failed API call.
	retryAt time.Time

	leading    bool
	mine       *record // our last successful write, while leading
	term       uint64
	validUntil time.Time
}

func newElector(lease, identity string, t tables.LeaseTimings, api leaseAPI, now func() time.Time) *elector {
	return &elector{lease: lease, identity: identity, timings: t, api: api, now: now}
}

// state is the row of table leadership.
func (e *elector) state() *tables.Leadership {
	l := &tables.Leadership{Lease: e.lease, Identity: e.identity, Leading: e.leading, Term: e.term}
	if e.seen != nil {
		l.Holder = e.seen.Holder
	}
	if e.leading {
		l.ValidUntil = e.validUntil
	}
	return l
}

// observe records a version of the Lease seen at time at (nil: it does not
// exist). A version seen again keeps its first sighting time. Sightings
// never end a term: a watch may deliver an older version late, so only a
// failed conditional renewal proves that someone else wrote the Lease.
func (e *elector) observe(r *record, at time.Time) {
	switch {
	case r == nil:
		e.seen, e.seenAt = nil, at
	case e.seen == nil || r.version != e.seen.version:
		e.seen, e.seenAt = r, at
	}
}

// takeoverAt is when a follower may next try to take the Lease: at once if
// it is unknown, free, or ours; else Duration after it last changed.
func (e *elector) takeoverAt() time.Time {
	at := e.retryAt
	if e.seen != nil && e.seen.Holder != "" && e.seen.Holder != e.identity {
		if t := e.seenAt.Add(e.durationOf(e.seen)); t.After(at) {
			at = t
		}
	}
	return at
}

// durationOf is the holder's lease duration; a record without one gets
// ours, never less.
func (e *elector) durationOf(r *record) time.Duration {
	if r.Duration > 0 {
		return r.Duration
	}
	return e.timings.Duration
}

// tryAcquire reads the Lease and takes it when it is missing, free, ours,
// or unchanged for its duration. It reports whether a term started.
func (e *elector) tryAcquire(ctx context.Context) (bool, error) {
	if e.leading {
		return true, nil
	}
	r, err := e.api.Get(ctx)
	if err != nil {
		e.retryAt = e.now().Add(e.timings.RetryPeriod)
		return false, fmt.Errorf("reading Lease %s: %w", e.lease, err)
	}
	now := e.now()
	e.observe(r, now)
	if r != nil && !e.mayTake(r, now) {
		return false, nil
	}

	var got *record
	sent := e.now()
	if r == nil {
		got, err = e.api.Create(ctx, record{
			Holder: e.identity, Duration: e.timings.Duration, AcquireTime: sent, RenewTime: sent,
		})
	} else {
		next := *r
		if r.Holder != e.identity {
			next.Transitions++
			next.AcquireTime = sent
		}
		next.Holder, next.Duration, next.RenewTime = e.identity, e.timings.Duration, sent
		got, err = e.api.Update(ctx, next)
	}
	switch {
	case errors.Is(err, errConflict):
		return false, nil // someone else was faster; the next read shows who
	case err != nil:
		e.retryAt = e.now().Add(e.timings.RetryPeriod)
		return false, fmt.Errorf("taking Lease %s: %w", e.lease, err)
	}
	e.leading = true
	e.term++
	e.mine = got
	e.seen, e.seenAt = got, e.now()
	e.validUntil = sent.Add(e.timings.RenewDeadline)
	return true, nil
}

func (e *elector) mayTake(r *record, now time.Time) bool {
	return r.Holder == "" || r.Holder == e.identity || !now.Before(e.seenAt.Add(e.durationOf(r)))
}

// renew extends the term. A conflict ends it; any other error leaves it
// running but lets it lapse at validUntil: if the next renewal succeeds,
// nobody can have written the Lease in between, so the term goes on.
func (e *elector) renew(ctx context.Context) error {
	if !e.leading {
		return nil
	}
	next := *e.mine
	sent := e.now()
	next.RenewTime, next.Duration = sent, e.timings.Duration
	rctx, cancel := context.WithTimeout(ctx, e.timings.RenewDeadline)
	defer cancel()
	got, err := e.api.Update(rctx, next)
	switch {
	case errors.Is(err, errConflict):
		e.lose()
		return fmt.Errorf("renewing Lease %s: %w: term %d ended", e.lease, err, e.term)
	case err != nil:
		return fmt.Errorf("renewing Lease %s: %w", e.lease, err)
	}
	e.mine = got
	e.seen, e.seenAt = got, e.now()
	e.validUntil = sent.Add(e.timings.RenewDeadline)
	return nil
}

// lapsed reports whether the term's writes are on hold (renewals failing).
func (e *elector) lapsed() bool { return e.leading && !e.now().Before(e.validUntil) }

func (e *elector) lose() {
	e.leading = false
	e.mine = nil
	e.validUntil = time.Time{}
}

// release ends the term and, if nobody can have taken the Lease yet, frees
// it so that another agent takes over at once. ended runs once the term is
// over and before the release is sent: the caller publishes it there, which
// closes the fence for this agent's writers.
func (e *elector) release(ctx context.Context, ended func()) error {
	if !e.leading {
		ended()
		return nil
	}
	mine, valid := *e.mine, e.now().Before(e.validUntil)
	e.lose()
	ended()
	if !valid {
		// Someone may hold it already: touch nothing.
		return nil
	}
	now := e.now()
	mine.Holder, mine.Duration, mine.AcquireTime, mine.RenewTime = "", time.Second, now, now
	got, err := e.api.Update(ctx, mine)
	if err != nil {
		return fmt.Errorf("releasing Lease %s: %w", e.lease, err)
	}
	e.seen, e.seenAt = got, e.now()
	return nil
}
