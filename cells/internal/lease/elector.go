// Package lease is Herald's Lease elector: the rules that keep two agents
// from holding one Lease at once, even across freezes of either, on the
// Kubernetes Lease API in client-go's leaderelection record format. The
// election cell runs it for the cluster-wide singletons, the L2 announcer
// for the announcement Leases; each owns its timing and fencing contract,
// this package only the decisions.
//
// Why not client-go's leaderelection: it judges its own leadership from
// when it read a renewal's answer, not from when it sent it; its release
// decides from a cached record that may be stale after a pause, and can
// clear a Lease another agent took meanwhile; and it exposes no deadline to
// fence writes with.
package lease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/heraldlb/herald/tables"
)

// Record is what the elector knows of the Lease object.
type Record struct {
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

// ErrConflict: the Lease changed (or appeared, or vanished) since it was
// read; the write did not happen.
var ErrConflict = errors.New("the Lease changed since it was read")

// API is the Lease as the elector sees it; Kube implements it on the
// Kubernetes API.
type API interface {
	// Get returns the Lease, or nil if it does not exist.
	Get(ctx context.Context) (*Record, error)
	// Create creates the Lease; ErrConflict if it exists.
	Create(ctx context.Context, r Record) (*Record, error)
	// Update writes r if the Lease is still at r.version; ErrConflict if not.
	Update(ctx context.Context, r Record) (*Record, error)
}

// Elector is one agent's campaign for one Lease: the decisions, without
// the waiting (the caller's loop). Times come from now; the monotonic
// clock is what makes the deadlines safe across pauses.
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
type Elector struct {
	lease    string
	identity string
	timings  tables.LeaseTimings
	api      API
	now      func() time.Time

	// seen is the latest version of the Lease seen (read, watched or
	// written), seenAt when that version was first seen.
	seen   *Record
	seenAt time.Time
	// retryAt delays the next attempt after a failed API call.
	retryAt time.Time

	leading    bool
	mine       *Record // our last successful write, while leading
	term       uint64
	validUntil time.Time
}

func NewElector(lease, identity string, t tables.LeaseTimings, api API, now func() time.Time) *Elector {
	return &Elector{lease: lease, identity: identity, timings: t, api: api, now: now}
}

// State is the row of table leadership.
func (e *Elector) State() *tables.Leadership {
	l := &tables.Leadership{Lease: e.lease, Identity: e.identity, Leading: e.leading, Term: e.term}
	if e.seen != nil {
		l.Holder = e.seen.Holder
	}
	if e.leading {
		l.ValidUntil = e.validUntil
	}
	return l
}

// Observe records a version of the Lease seen at time at (nil: it does not
// exist). A version seen again keeps its first sighting time. Sightings
// never end a term: a watch may deliver an older version late, so only a
// failed conditional renewal proves that someone else wrote the Lease.
func (e *Elector) Observe(r *Record, at time.Time) {
	switch {
	case r == nil:
		e.seen, e.seenAt = nil, at
	case e.seen == nil || r.version != e.seen.version:
		e.seen, e.seenAt = r, at
	}
}

// TakeoverAt is when a follower may next try to take the Lease: at once if
// it is unknown, free, or ours; else Duration after it last changed.
func (e *Elector) TakeoverAt() time.Time {
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
func (e *Elector) durationOf(r *Record) time.Duration {
	if r.Duration > 0 {
		return r.Duration
	}
	return e.timings.Duration
}

// TryAcquire reads the Lease and takes it when it is missing, free, ours,
// or unchanged for its duration. It reports whether a term started.
func (e *Elector) TryAcquire(ctx context.Context) (bool, error) {
	if e.leading {
		return true, nil
	}
	r, err := e.api.Get(ctx)
	if err != nil {
		e.retryAt = e.now().Add(e.timings.RetryPeriod)
		return false, fmt.Errorf("reading Lease %s: %w", e.lease, err)
	}
	now := e.now()
	e.Observe(r, now)
	if r != nil && !e.mayTake(r, now) {
		return false, nil
	}

	var got *Record
	sent := e.now()
	if r == nil {
		got, err = e.api.Create(ctx, Record{
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
	case errors.Is(err, ErrConflict):
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

func (e *Elector) mayTake(r *Record, now time.Time) bool {
	return r.Holder == "" || r.Holder == e.identity || !now.Before(e.seenAt.Add(e.durationOf(r)))
}

// Renew extends the term. A conflict ends it; any other error leaves it
// running but lets it lapse at validUntil: if the next renewal succeeds,
// nobody can have written the Lease in between, so the term goes on.
func (e *Elector) Renew(ctx context.Context) error {
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
	case errors.Is(err, ErrConflict):
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

// Lapsed reports whether the term's writes are on hold (renewals failing).
func (e *Elector) Lapsed() bool { return e.leading && !e.now().Before(e.validUntil) }

func (e *Elector) lose() {
	e.leading = false
	e.mine = nil
	e.validUntil = time.Time{}
}

// Release ends the term and, if nobody can have taken the Lease yet, frees
// it so that another agent takes over at once. ended runs once the term is
// over and before the release is sent: the caller publishes it there, which
// closes the fence for this agent's writers.
func (e *Elector) Release(ctx context.Context, ended func()) error {
	if !e.leading {
		ended()
		return nil
	}
	mine, valid, validUntil := *e.mine, e.now().Before(e.validUntil), e.validUntil
	e.lose()
	ended()
	if !valid {
		// Someone may hold it already: touch nothing.
		return nil
	}
	got, err := e.api.Update(ctx, freed(mine, e.now()))
	if errors.Is(err, ErrConflict) {
		// A renewal whose answer never came (cancelled at shutdown) may
		// have changed the version. A Lease that still names this agent
		// was taken by nobody (taking it writes another holder), so what
		// is there now may be released, while the term is still valid.
		if cur, gerr := e.api.Get(ctx); gerr == nil && cur != nil && cur.Holder == e.identity && e.now().Before(validUntil) {
			got, err = e.api.Update(ctx, freed(*cur, e.now()))
		}
	}
	if err != nil {
		return fmt.Errorf("releasing Lease %s: %w", e.lease, err)
	}
	e.seen, e.seenAt = got, e.now()
	return nil
}

// freed is r released at now: no holder, a one-second duration.
func freed(r Record, now time.Time) Record {
	r.Holder, r.Duration, r.AcquireTime, r.RenewTime = "", time.Second, now, now
	return r
}

// Leading reports whether a term is running (it may have lapsed).
func (e *Elector) Leading() bool { return e.leading }

// Term counts this elector's terms; the current one while leading.
func (e *Elector) Term() uint64 { return e.term }

// ValidUntil is the end of the current term's right to act: the send time
// of its last successful write plus the renew deadline. Zero when not
// leading.
func (e *Elector) ValidUntil() time.Time { return e.validUntil }

// Timings are the elector's timings.
func (e *Elector) Timings() tables.LeaseTimings { return e.timings }
