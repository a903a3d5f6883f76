package elector

import (
	"fmt"
	"testing"
	"time"
)

func TestFence(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	n := 0
	f := &fence{newTerm: func() string { n++; return fmt.Sprint("t", n) }}

	steps := []struct {
		name      string
		now       int // ms
		until     int // ms
		hold      int // ms; 0: none
		since     int // ms; 0: none (the evidence is as of now)
		newTerm   bool
		term      string
		validAt   int
		wantValid bool
	}{
		{"first evidence starts a term", 0, 300, 0, 0, true, "t1", 100, true},
		{"evidence within the term extends it", 200, 500, 0, 0, false, "t1", 450, true},
		{"older evidence never shortens it", 250, 400, 0, 0, false, "t1", 450, true},
		{"stale evidence (expired before it was read) is ignored", 600, 550, 0, 0, false, "t1", 600, false},
		{"after a gap, evidence starts a new term", 700, 1000, 0, 0, true, "t2", 900, true},
		{"the term ends exactly at its deadline", 800, 900, 0, 0, false, "t2", 1000, false},
		{"a hold beyond the deadline keeps the term", 900, 950, 2000, 0, false, "t2", 1000, false},
		{"answers resume in the held term", 1500, 1800, 0, 0, false, "t2", 1700, true},
		{"stale answers with a hold: same term, silent", 1900, 1850, 2500, 0, false, "t2", 1900, false},
		{"after the hold ran out, a new term", 2600, 2900, 0, 0, true, "t3", 2700, true},
		{"a hold alone starts a term, silent", 3000, 0, 3500, 0, true, "t4", 3100, false},
		{"a run of confirmations begun before the hold ran out, read late: same term", 4000, 4200, 0, 3400, false, "t4", 4100, true},
		{"the run's deadline still ends the answers", 4000, 4200, 0, 3400, false, "t4", 4300, false},
		{"a run begun exactly when the term ran out: a new term", 4500, 4800, 0, 4200, true, "t5", 4600, true},
		{"a run begun after the term ran out, read late: a new term", 5000, 5300, 0, 4900, true, "t6", 5100, true},
		{"a late read of a stale run is still stale", 6000, 5900, 0, 5000, false, "t6", 6000, false},
	}
	for _, s := range steps {
		hold := time.Time{}
		if s.hold != 0 {
			hold = at(s.hold)
		}
		since := time.Time{}
		if s.since != 0 {
			since = at(s.since)
		}
		got := f.advance(at(s.now), at(s.until), hold, since)
		if got != s.newTerm || f.term != s.term {
			t.Fatalf("%s: newTerm=%v term=%s, want %v %s", s.name, got, f.term, s.newTerm, s.term)
		}
		if v := f.valid(at(s.validAt)); v != s.wantValid {
			t.Fatalf("%s: valid at %dms = %v, want %v", s.name, s.validAt, v, s.wantValid)
		}
	}
}

// extend, used while a round runs, takes only the evidence that continues
// the term; advance would start a new one.
func TestFenceExtend(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	f := &fence{newTerm: func() string { return "t1" }}
	if f.extend(at(0), at(300), time.Time{}, time.Time{}) || f.term != "" {
		t.Fatalf("extend without a term started %q", f.term)
	}
	f.advance(at(0), at(300), time.Time{}, time.Time{})
	if !f.extend(at(200), at(500), time.Time{}, time.Time{}) || !f.valid(at(450)) {
		t.Fatal("evidence within the term did not extend it")
	}
	if !f.extend(at(700), at(900), time.Time{}, at(400)) || !f.valid(at(800)) {
		t.Fatal("a run begun within the term, read after it ran out, did not extend it")
	}
	if f.extend(at(1000), at(1300), time.Time{}, at(950)) || f.valid(at(1100)) || f.term != "t1" {
		t.Fatal("evidence after a gap extended the term")
	}
	if f.extend(at(1000), at(950), time.Time{}, time.Time{}) {
		t.Fatal("stale evidence extended the term")
	}
}

func TestJudge(t *testing.T) {
	confirmed, own, wit := confirmation{since: time.Unix(90, 0), until: time.Unix(100, 0)}, time.Unix(200, 0), time.Unix(150, 0)
	renewed, gone := witness{own: wit}, witness{own: wit, peersGone: true}
	for _, tc := range []struct {
		name           string
		live, universe int
		own            time.Time
		w              witness
		until, hold    time.Time
		mayMove        bool
	}{
		{"three of three: peers confirm", 3, 3, own, renewed, confirmed.until, time.Time{}, true},
		{"two of three: still a majority", 2, 3, own, renewed, confirmed.until, time.Time{}, true},
		{"two of two: peers confirm, the witness holds the term", 2, 2, own, renewed, confirmed.until, wit, true},
		{"one of three: the other two may take over; stop", 1, 3, own, renewed, time.Time{}, time.Time{}, false},
		{"alone in a cluster of one, Lease renewed", 1, 1, own, renewed, own, time.Time{}, true},
		{"alone, Lease not renewed", 1, 1, time.Time{}, renewed, time.Time{}, time.Time{}, false},
		{"one of two: keep what is held while the witness is renewed", 1, 2, own, renewed, wit, wit, false},
		{"one of two, the other's witness expired: take over", 1, 2, own, gone, wit, wit, true},
		{"one of two, own witness not renewed: stop, whatever the Lease", 1, 2, own, witness{peersGone: true}, time.Time{}, time.Time{}, false},
		{"two of four: even split, keep while the Lease is renewed", 2, 4, own, renewed, own, time.Time{}, false},
		{"two of five: a majority may exist elsewhere; stop", 2, 5, own, renewed, time.Time{}, time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := judge(tc.live, tc.universe, confirmed, tc.own, tc.w)
			if !st.until.Equal(tc.until) || !st.hold.Equal(tc.hold) || st.mayMove != tc.mayMove {
				t.Errorf("until %v hold %v mayMove %v (%s), want %v %v %v", st.until, st.hold, st.mayMove, st.why, tc.until, tc.hold, tc.mayMove)
			}
			// The run behind the peers' confirmations comes with them,
			// and only with them: other evidence is as of now.
			wantSince := time.Time{}
			if tc.until.Equal(confirmed.until) {
				wantSince = confirmed.since
			}
			if !st.since.Equal(wantSince) {
				t.Errorf("since %v, want %v", st.since, wantSince)
			}
		})
	}
}
