package leader

import (
	"errors"
	"testing"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/tables"
)

// Writes resume when a term starts, or when a renewal lands after the
// term's validity ran out (an API-server outage): not at every renewal.
func TestResumed(t *testing.T) {
	now := time.Now()
	lead := func(term uint64, validFor time.Duration) *tables.Leadership {
		return &tables.Leadership{Leading: true, Term: term, ValidUntil: now.Add(validFor)}
	}
	follow := &tables.Leadership{}
	for _, tt := range []struct {
		name    string
		prev, l *tables.Leadership
		resumed bool
	}{
		{"first sight of a valid term", nil, lead(1, time.Second), true},
		{"a follower becomes leader", follow, lead(1, time.Second), true},
		{"a new term", lead(1, time.Second), lead(2, time.Second), true},
		{"renewed after the term lapsed", lead(1, -time.Second), lead(1, time.Second), true},
		{"renewed in time", lead(1, 100*time.Millisecond), lead(1, time.Second), false},
		{"lapsed", lead(1, time.Second), lead(1, -time.Second), false},
		{"following", lead(1, -time.Second), follow, false},
		{"no row", lead(1, -time.Second), nil, false},
	} {
		if got := resumed(tt.prev, tt.l, now); got != tt.resumed {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.resumed)
		}
	}
}

// Only the rows in error become pending; the others keep their status.
func TestRequeueFailed(t *testing.T) {
	db := statedb.New()
	tbl, err := tables.NewLBPoolStatusTable(db)
	if err != nil {
		t.Fatal(err)
	}
	wtxn := db.WriteTxn(tbl)
	for name, s := range map[string]reconciler.Status{
		"failed":  reconciler.StatusError(errors.New("not the leader")),
		"done":    reconciler.StatusDone(),
		"pending": reconciler.StatusPending(),
	} {
		_, _, _ = tbl.Insert(wtxn, &tables.LBPoolStatus{Name: name, Status: s})
	}
	wtxn.Commit()
	rows := StatusRows[*tables.LBPoolStatus]{Table: tbl, Clone: (*tables.LBPoolStatus).Clone,
		Get: (*tables.LBPoolStatus).GetStatus, Set: (*tables.LBPoolStatus).SetStatus}
	if n := requeueFailed(db, rows); n != 1 {
		t.Errorf("requeued %d rows, want 1", n)
	}
	want := map[string]reconciler.StatusKind{"failed": reconciler.StatusKindPending, "done": reconciler.StatusKindDone, "pending": reconciler.StatusKindPending}
	for obj := range tbl.All(db.ReadTxn()) {
		if obj.Status.Kind != want[obj.Name] {
			t.Errorf("%s: %s, want %s", obj.Name, obj.Status.Kind, want[obj.Name])
		}
	}
}
