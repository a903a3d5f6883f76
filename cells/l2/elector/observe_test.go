package elector

import (
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
)

// A Lease counts as held by an agent of the Lease election while it is
// renewed (written again with the same holder and term), and, right after
// this agent started, while its holder is no member it knows; a change of
// holder or term is this election's own doing.
func TestObserveRecord(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const d = 2 * time.Second
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	e := &elector{records: map[string]seenRecord{}}
	lease := func(version, holder, term string) *tables.L2Lease {
		return &tables.L2Lease{Name: "g", ResourceVersion: version, Holder: holder, Term: term, DurationSeconds: 2}
	}
	for _, step := range []struct {
		name      string
		now       int
		l         *tables.L2Lease
		member    bool
		want      bool
		wantUntil int
	}{
		{"first seen, holder a member: nothing known against it", 0, lease("1", "node1", "t1"), true, false, 0},
		{"written again for another term of the same holder: this election", 500, lease("2", "node1", "t2"), true, false, 0},
		{"written again, same holder and term: renewed", 1000, lease("3", "node1", "t2"), true, true, 3000},
		{"still within the duration", 2900, lease("3", "node1", "t2"), true, true, 3000},
		{"not renewed for the duration", 3000, lease("3", "node1", "t2"), true, false, 0},
		{"another holder: a handover", 3500, lease("4", "node2", "t5"), true, false, 0},
	} {
		got, until := e.observeRecord(step.l, at(step.now), d, step.member)
		wantUntil := time.Time{}
		if step.want {
			wantUntil = at(step.wantUntil)
		}
		if got != step.want || !until.Equal(wantUntil) {
			t.Fatalf("%s: %v until %v, want %v until %v", step.name, got, until, step.want, wantUntil)
		}
	}

	// Just started: a holder that is no known member may be renewing it.
	e = &elector{records: map[string]seenRecord{}}
	if got, until := e.observeRecord(lease("7", "node9", "t0"), at(0), d, false); !got || !until.Equal(at(2000)) {
		t.Fatalf("first seen, holder unknown: %v until %v, want true until +2s", got, until)
	}
	if got, _ := e.observeRecord(lease("7", "node9", "t0"), at(2000), d, false); got {
		t.Fatal("unknown holder, unchanged for the duration: still counted as renewed")
	}
	if got, _ := e.observeRecord(lease("8", "", ""), at(2100), d, false); got {
		t.Fatal("a Lease without holder counted as renewed")
	}
}
