package l2elector

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
		newTerm   bool
		term      string
		validAt   int
		wantValid bool
	}{
		{"first evidence starts a term", 0, 300, true, "t1", 100, true},
		{"evidence within the term extends it", 200, 500, false, "t1", 450, true},
		{"older evidence never shortens it", 250, 400, false, "t1", 450, true},
		{"stale evidence (expired before it was read) is ignored", 600, 550, false, "t1", 600, false},
		{"after a gap, evidence starts a new term", 700, 1000, true, "t2", 900, true},
		{"the term ends exactly at its deadline", 800, 900, false, "t2", 1000, false},
	}
	for _, s := range steps {
		got := f.advance(at(s.now), at(s.until))
		if got != s.newTerm || f.term != s.term {
			t.Fatalf("%s: newTerm=%v term=%s, want %v %s", s.name, got, f.term, s.newTerm, s.term)
		}
		if v := f.valid(at(s.validAt)); v != s.wantValid {
			t.Fatalf("%s: valid at %dms = %v, want %v", s.name, s.validAt, v, s.wantValid)
		}
	}
}
