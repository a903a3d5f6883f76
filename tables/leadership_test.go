package tables

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unsafe"
)

func TestLeaseTimingsValidate(t *testing.T) {
	ms := time.Millisecond
	for _, tt := range []struct {
		name    string
		timings LeaseTimings
		want    string // "" = valid
	}{
		{"lb-ipam defaults", LeaseTimings{2 * time.Second, time.Second, 250 * ms}, ""},
		{"client-go's defaults", LeaseTimings{15 * time.Second, 10 * time.Second, 2 * time.Second}, ""},
		{"margin exactly 250ms, retry exactly half", LeaseTimings{time.Second, 750 * ms, 375 * ms}, ""},

		{"duration not whole seconds", LeaseTimings{1500 * ms, time.Second, 250 * ms},
			"lease duration 1.5s must be a whole number of seconds, at least 1s (the Lease stores whole seconds)"},
		{"duration zero", LeaseTimings{0, time.Second, 250 * ms},
			"lease duration 0s must be a whole number of seconds, at least 1s (the Lease stores whole seconds)"},
		{"duration under a second", LeaseTimings{500 * ms, 200 * ms, 100 * ms},
			"lease duration 500ms must be a whole number of seconds, at least 1s (the Lease stores whole seconds)"},
		{"renew deadline zero", LeaseTimings{2 * time.Second, 0, 250 * ms},
			"renew deadline 0s must be positive and shorter than the lease duration 2s"},
		{"renew deadline negative", LeaseTimings{2 * time.Second, -time.Second, 250 * ms},
			"renew deadline -1s must be positive and shorter than the lease duration 2s"},
		{"renew deadline equal to duration", LeaseTimings{2 * time.Second, 2 * time.Second, 250 * ms},
			"renew deadline 2s must be positive and shorter than the lease duration 2s"},
		{"renew deadline longer than duration", LeaseTimings{2 * time.Second, 3 * time.Second, 250 * ms},
			"renew deadline 3s must be positive and shorter than the lease duration 2s"},
		{"margin under 250ms", LeaseTimings{time.Second, 900 * ms, 250 * ms},
			"lease duration 1s minus renew deadline 900ms leaves less than 250ms for a stale leader's last writes to land"},
		{"retry period zero", LeaseTimings{2 * time.Second, time.Second, 0},
			"retry period 0s must be positive and at most half the renew deadline 1s (two renewals per deadline)"},
		{"retry period over half the renew deadline", LeaseTimings{2 * time.Second, time.Second, 501 * ms},
			"retry period 501ms must be positive and at most half the renew deadline 1s (two renewals per deadline)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.timings.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.want != "" && err == nil:
				t.Fatalf("Validate() = nil, want %q", tt.want)
			case tt.want != "" && err.Error() != tt.want:
				t.Fatalf("Validate() = %q, want %q", err, tt.want)
			}
		})
	}
}

// TestFence covers each way a write may be refused at the last moment, and
// the one way it goes out. now is passed in, so every case is exact: no
// case depends on how long the test takes.
func TestFence(t *testing.T) {
	base := time.Now() // with a monotonic reading, as the elector's are
	valid := base.Add(time.Second)
	leading := &Leadership{Lease: LBIPAMLease, Identity: "node1_a", Holder: "node1_a", Leading: true, Term: 2, ValidUntil: valid}
	following := &Leadership{Lease: LBIPAMLease, Identity: "node1_a", Holder: "node2_b"}

	for _, tt := range []struct {
		name string
		l    *Leadership
		term uint64
		now  time.Time
		want string // "" = the write may go out; else the error's text
	}{
		{"leading, in term, before the deadline", leading, 2, base, ""},
		{"just before the deadline", leading, 2, valid.Add(-time.Nanosecond), ""},
		{"no monotonic reading, before the deadline", leading, 2, base.Round(0), ""},

		{"no leadership row", nil, 2, base, "not the leader of the Lease"},
		{"following", following, 2, base, "not the leader of herald-lb-ipam"},
		{"decided in term 1, term 2 began since", leading, 1, base,
			"not the leader of herald-lb-ipam in term 1 (now term 2)"},
		{"decided in term 3, this agent is in term 2", leading, 3, base,
			"not the leader of herald-lb-ipam in term 3 (now term 2)"},
		// A lapsed term: the last successful renewal is too old (the
		// process was paused, or renewals failed).
		{"at the deadline", leading, 2, valid, "not the leader of herald-lb-ipam: term 2 lapsed at"},
		{"after the deadline", leading, 2, base.Add(20 * time.Second), "not the leader of herald-lb-ipam: term 2 lapsed at"},
		{"no monotonic reading, after the deadline", leading, 2, valid.Round(0), "not the leader of herald-lb-ipam: term 2 lapsed at"},
		// A VM suspended while its monotonic clock stood still: the wall
		// clock, corrected on resume, is past the deadline.
		{"wall clock past the deadline, monotonic clock not", leading, 2, wallShifted(t, base, 2*time.Second),
			"not the leader of herald-lb-ipam: term 2 lapsed at"},
		// The wall clock stepped back (NTP): the monotonic one still counts.
		{"monotonic clock past the deadline, wall clock not", leading, 2, wallShifted(t, base.Add(2*time.Second), -2*time.Second),
			"not the leader of herald-lb-ipam: term 2 lapsed at"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel, err := tt.l.Fence(context.Background(), tt.term, tt.now)
			if tt.want != "" {
				if err == nil {
					cancel()
					t.Fatalf("Fence allowed the write, want %q", tt.want)
				}
				if !errors.Is(err, ErrNotLeader) || !strings.HasPrefix(err.Error(), tt.want) {
					t.Fatalf("Fence error %q, want ErrNotLeader starting with %q", err, tt.want)
				}
				if ctx != nil || cancel != nil {
					t.Fatal("a refused write got a context")
				}
				return
			}
			if err != nil {
				t.Fatalf("Fence refused the write: %v", err)
			}
			defer cancel()
			// The request may not outlive the term.
			if d, ok := ctx.Deadline(); !ok || !d.Equal(valid) {
				t.Fatalf("context deadline %v (set %v), want the term's end %v", d, ok, valid)
			}
		})
	}
}

// TestFenceContextEndsAtDeadline: a request still waiting (rate limiter,
// slow connection) when the term's validity ends is abandoned then.
func TestFenceContextEndsAtDeadline(t *testing.T) {
	// The check is made at now, whenever the test gets to run it.
	now := time.Now()
	valid := now.Add(50 * time.Millisecond)
	l := &Leadership{Lease: LBIPAMLease, Leading: true, Term: 1, ValidUntil: valid}
	ctx, cancel, err := l.Fence(context.Background(), 1, now)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the write's context outlived the term by a minute")
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("context ended with %v, want the deadline", ctx.Err())
	}
	if now := time.Now(); now.Before(valid) {
		t.Fatalf("context ended at %v, before the term's end %v", now, valid)
	}

	// Ending the caller's context ends the write too.
	parent, stop := context.WithCancel(context.Background())
	l.ValidUntil = time.Now().Add(time.Hour)
	ctx, cancel, err = l.Fence(parent, 1, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	stop()
	<-ctx.Done()
	if !errors.Is(ctx.Err(), context.Canceled) {
		t.Fatalf("context ended with %v, want canceled with its parent", ctx.Err())
	}
}

// wallShifted returns t with its wall clock reading moved by d (whole
// seconds) and its monotonic reading kept, as a process sees the two drift
// apart when a suspended VM's wall clock is corrected or NTP steps it. Go
// has no API for this; it relies on time.Time's layout (wall, ext, loc,
// with the seconds since 1885 in bits 30-62 of wall when a monotonic
// reading is present) and checks the result, so that a change of layout
// fails the test rather than testing nothing.
func wallShifted(tb testing.TB, t time.Time, d time.Duration) time.Time {
	tb.Helper()
	if d%time.Second != 0 {
		tb.Fatalf("wallShifted: %s is not whole seconds", d)
	}
	type layout struct {
		wall uint64
		ext  int64
		loc  *time.Location
	}
	if unsafe.Sizeof(t) != unsafe.Sizeof(layout{}) {
		tb.Fatal("wallShifted: time.Time's layout changed")
	}
	out := t
	p := (*layout)(unsafe.Pointer(&out))
	const hasMonotonic = 1 << 63
	if p.wall&hasMonotonic == 0 {
		tb.Fatal("wallShifted: t has no monotonic reading")
	}
	p.wall = uint64(int64(p.wall) + int64(d/time.Second)<<30)
	if !out.Round(0).Equal(t.Round(0).Add(d)) || out.Sub(t) != 0 {
		tb.Fatalf("wallShifted: time.Time's layout changed (wall %v, want %v; monotonic moved %s)",
			out.Round(0), t.Round(0).Add(d), out.Sub(t))
	}
	return out
}
