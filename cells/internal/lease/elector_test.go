package lease

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
)

var timings = tables.LeaseTimings{Duration: 2 * time.Second, RenewDeadline: time.Second, RetryPeriod: 250 * time.Millisecond}

// clock is a manual clock shared by electors and the fake API.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// fakeLease is a Lease with conditional writes, as the API server keeps it.
type fakeLease struct {
	rec     *Record
	version int
	// fail makes the next calls fail with this error (an unreachable API).
	fail error
	// during runs inside the next write, after it was applied and before
	// its answer returns: time passes there as in a pause.
	during func()
	// loseAnswer makes the next write apply and then fail, as a request
	// cancelled after the API server took it.
	loseAnswer bool
	writes     int
}

func (f *fakeLease) Get(context.Context) (*Record, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	if f.rec == nil {
		return nil, nil
	}
	r := *f.rec
	return &r, nil
}

func (f *fakeLease) Create(_ context.Context, r Record) (*Record, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	if f.rec != nil {
		return nil, ErrConflict
	}
	return f.store(r), nil
}

func (f *fakeLease) Update(_ context.Context, r Record) (*Record, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	if f.rec == nil || f.rec.version != r.version {
		return nil, ErrConflict
	}
	stored := f.store(r)
	if f.loseAnswer {
		f.loseAnswer = false
		return nil, context.Canceled
	}
	return stored, nil
}

func (f *fakeLease) store(r Record) *Record {
	f.version++
	f.writes++
	r.version = strconv.Itoa(f.version)
	f.rec = &r
	if f.during != nil {
		d := f.during
		f.during = nil
		d()
	}
	out := r
	return &out
}

func newTestElector(id string, api API, c *clock) *Elector {
	return NewElector(tables.LBIPAMLease, id, timings, api, c.now)
}

// valid reports whether the elector may write now, by the fence its
// published state gives.
func valid(e *Elector, now time.Time) bool {
	_, cancel, err := e.State().Fence(context.Background(), e.term, now)
	if cancel != nil {
		cancel()
	}
	return err == nil
}

func mustAcquire(t *testing.T, e *Elector) {
	t.Helper()
	ok, err := e.TryAcquire(context.Background())
	if err != nil || !ok {
		t.Fatalf("%s: tryAcquire = %v, %v; want a term", e.identity, ok, err)
	}
}

func TestAcquireMissingLease(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	api := &fakeLease{}
	e := newTestElector("a", api, c)
	mustAcquire(t, e)
	st := e.State()
	if !st.Leading || st.Term != 1 || st.Holder != "a" || !st.ValidUntil.Equal(c.now().Add(timings.RenewDeadline)) {
		t.Fatalf("state = %+v", st)
	}
	if api.rec.Holder != "a" || api.rec.Duration != timings.Duration {
		t.Fatalf("lease = %+v", api.rec)
	}
}

func TestFollowerWaitsDurationAfterLastChange(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	api := &fakeLease{}
	a, b := newTestElector("a", api, c), newTestElector("b", api, c)
	mustAcquire(t, a)

	ctx := context.Background()
	if ok, _ := b.TryAcquire(ctx); ok {
		t.Fatal("b took a Lease renewed just now")
	}
	if want := c.now().Add(timings.Duration); !b.TakeoverAt().Equal(want) {
		t.Fatalf("takeoverAt = %v, want %v", b.TakeoverAt(), want)
	}
	// a renews; b sees the new version later, and counts from then.
	c.advance(500 * time.Millisecond)
	if err := a.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	c.advance(100 * time.Millisecond)
	seen, _ := api.Get(ctx)
	b.Observe(seen, c.now())
	if want := c.now().Add(timings.Duration); !b.TakeoverAt().Equal(want) {
		t.Fatalf("takeoverAt after a renewal = %v, want %v", b.TakeoverAt(), want)
	}
	// a dies. Just before the Lease expires in b's view: not yet.
	c.advance(timings.Duration - time.Millisecond)
	if ok, _ := b.TryAcquire(ctx); ok {
		t.Fatal("b took the Lease before it expired")
	}
	c.advance(time.Millisecond)
	mustAcquire(t, b)
	if api.rec.Transitions != 1 || api.rec.Holder != "b" {
		t.Fatalf("lease after takeover = %+v", api.rec)
	}
	// The margin: a's last writes had to go out before b's term began.
	if !a.validUntil.Add(timings.Duration - timings.RenewDeadline).Before(c.now().Add(time.Nanosecond)) {
		t.Fatalf("a valid until %v, b leads from %v: less than the margin apart", a.validUntil, c.now())
	}
}

// A renewal's answer read after a pause must not stretch the term: it
// counts from when it was sent (issue: a late renewal counted as fresh).
func TestRenewalCountsFromSendTime(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	api := &fakeLease{}
	a := newTestElector("a", api, c)
	mustAcquire(t, a)
	sent := c.now()
	api.during = func() { c.advance(5 * time.Second) } // frozen right after the write
	if err := a.Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	if want := sent.Add(timings.RenewDeadline); !a.validUntil.Equal(want) {
		t.Fatalf("validUntil = %v, want send time + renew deadline = %v", a.validUntil, want)
	}
	if valid(a, c.now()) {
		t.Fatal("the term is still valid after a pause longer than the renew deadline")
	}
}

func TestRenewConflictEndsTerm(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	api := &fakeLease{}
	a, b := newTestElector("a", api, c), newTestElector("b", api, c)
	mustAcquire(t, a)
	// a pauses; b sees no change for a lease duration and takes over.
	b.Observe(api.rec, c.now())
	c.advance(timings.Duration)
	mustAcquire(t, b)
	// a resumes: its renewal is conditional on the version it wrote.
	err := a.Renew(context.Background())
	if !errors.Is(err, ErrConflict) || a.leading || valid(a, c.now()) {
		t.Fatalf("renew after takeover: err=%v leading=%v", err, a.leading)
	}
	if api.rec.Holder != "b" {
		t.Fatalf("holder = %q, want b", api.rec.Holder)
	}
}

func TestTransientErrorsLapseThenResume(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	api := &fakeLease{}
	a := newTestElector("a", api, c)
	mustAcquire(t, a)
	api.fail = errors.New("connection refused")
	for i := 0; i < 8; i++ {
		c.advance(timings.RetryPeriod)
		if err := a.Renew(context.Background()); err == nil {
			t.Fatal("renew succeeded against a failing API")
		}
	}
	if !a.leading || !a.Lapsed() || valid(a, c.now()) {
		t.Fatalf("after 2s of failures: leading=%v lapsed=%v", a.leading, a.Lapsed())
	}
	// Nobody wrote the Lease meanwhile: the same term goes on.
	api.fail = nil
	if err := a.Renew(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !valid(a, c.now()) || a.term != 1 {
		t.Fatalf("after a successful renewal: valid=%v term=%d", valid(a, c.now()), a.term)
	}
}

func TestReleaseOnlyWhatIsStillOurs(t *testing.T) {
	ctx := context.Background()
	t.Run("valid: freed for an immediate takeover", func(t *testing.T) {
		c := &clock{t: time.Unix(1000, 0)}
		api := &fakeLease{}
		a, b := newTestElector("a", api, c), newTestElector("b", api, c)
		mustAcquire(t, a)
		b.Observe(api.rec, c.now())
		ended := false
		if err := a.Release(ctx, func() { ended = !a.leading }); err != nil || !ended {
			t.Fatalf("release: %v (term ended before the write: %v)", err, ended)
		}
		if api.rec.Holder != "" {
			t.Fatalf("holder after release = %q", api.rec.Holder)
		}
		mustAcquire(t, b) // at once, no lease duration to wait
	})
	t.Run("lapsed: not touched", func(t *testing.T) {
		c := &clock{t: time.Unix(1000, 0)}
		api := &fakeLease{}
		a := newTestElector("a", api, c)
		mustAcquire(t, a)
		writes := api.writes
		c.advance(timings.RenewDeadline)
		if err := a.Release(ctx, func() {}); err != nil || api.writes != writes || api.rec.Holder != "a" {
			t.Fatalf("release of a lapsed term wrote the Lease: %v, %+v", err, api.rec)
		}
	})
	t.Run("a renewal applied but its answer lost (shutdown): still released", func(t *testing.T) {
		c := &clock{t: time.Unix(1000, 0)}
		api := &fakeLease{}
		a := newTestElector("a", api, c)
		mustAcquire(t, a)
		// The API server applies the renewal; the answer never arrives.
		api.loseAnswer = true
		if err := a.Renew(ctx); err == nil {
			t.Fatal("a renewal whose answer was lost succeeded")
		}
		if err := a.Release(ctx, func() {}); err != nil || api.rec.Holder != "" {
			t.Fatalf("release after a lost answer = %v, holder %q; want released", err, api.rec.Holder)
		}
	})
	t.Run("taken over: conflict, the new holder keeps it", func(t *testing.T) {
		c := &clock{t: time.Unix(1000, 0)}
		api := &fakeLease{}
		a, b := newTestElector("a", api, c), newTestElector("b", api, c)
		mustAcquire(t, a)
		// b took over while a's term still looked valid to a (its clock
		// is the one that stood still): the version decides.
		api.rec.Holder, api.rec.version = "b", "999"
		err := a.Release(ctx, func() {})
		if !errors.Is(err, ErrConflict) || api.rec.Holder != "b" {
			t.Fatalf("release = %v, holder %q; want a conflict and b", err, api.rec.Holder)
		}
		_ = b
	})
}

// TestNeverTwoValidLeaders runs agents through random schedules: any of
// them may be paused for a while (SIGSTOP), its requests may take time, the
// API may fail. At every instant at most one may write.
func TestNeverTwoValidLeaders(t *testing.T) {
	for seed := int64(0); seed < 300; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			c := &clock{t: time.Unix(1000, 0)}
			api := &fakeLease{}
			var es []*Elector
			for i := 0; i < 3; i++ {
				es = append(es, newTestElector(fmt.Sprintf("agent-%d", i), api, c))
			}
			pausedUntil := make([]time.Time, len(es))
			ctx := context.Background()
			terms := 0
			check := func(step int) {
				var valids []string
				for _, o := range es {
					if valid(o, c.now()) {
						valids = append(valids, o.identity)
					}
				}
				if len(valids) > 1 {
					t.Fatalf("step %d: %v may all write", step, valids)
				}
			}
			for step := 0; step < 400; step++ {
				c.advance(time.Duration(rng.Intn(300)) * time.Millisecond)
				i := rng.Intn(len(es))
				e := es[i]
				switch r := rng.Intn(100); {
				case r < 5:
					pausedUntil[i] = c.now().Add(time.Duration(rng.Intn(6000)) * time.Millisecond)
				case r < 8:
					api.fail = errors.New("unreachable")
				case r < 12:
					api.fail = nil
				case r < 25:
					// A slow answer, or a pause between the write and reading
					// its answer: another agent sees the write at once, and
					// acts while this one is still waiting.
					other := es[(i+1+rng.Intn(len(es)-1))%len(es)]
					api.during = func() {
						seen := *api.rec
						other.Observe(&seen, c.now())
						c.advance(time.Duration(rng.Intn(3000)) * time.Millisecond)
						if !other.leading && !c.now().Before(other.TakeoverAt()) {
							if ok, _ := other.TryAcquire(ctx); ok {
								terms++
							}
						}
						check(step)
					}
				}
				if c.now().Before(pausedUntil[i]) {
					continue
				}
				if e.leading {
					_ = e.Renew(ctx)
				} else {
					if r, err := api.Get(ctx); err == nil && rng.Intn(2) == 0 {
						e.Observe(r, c.now()) // a watch event
					}
					if !c.now().Before(e.TakeoverAt()) {
						if ok, _ := e.TryAcquire(ctx); ok {
							terms++
						}
					}
				}
				api.during = nil
				check(step)
			}
			if terms == 0 {
				t.Fatal("no agent ever led: the schedule tests nothing")
			}
		})
	}
}
