package tablesync

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/cilium/statedb"
	"github.com/cilium/statedb/index"
)

type row struct {
	Name  string
	Value int
}

func (r *row) TableHeader() []string { return []string{"Name", "Value"} }
func (r *row) TableRow() []string    { return []string{r.Name, strconv.Itoa(r.Value)} }

var nameIndex = statedb.Index[*row, string]{
	Name:       "name",
	FromObject: func(r *row) index.KeySet { return index.NewKeySet(index.String(r.Name)) },
	FromKey:    index.String,
	Unique:     true,
}

func newTable(t *testing.T) (*statedb.DB, statedb.RWTable[*row]) {
	t.Helper()
	db := statedb.New()
	tbl, err := statedb.NewTable(db, "rows", nameIndex)
	if err != nil {
		t.Fatal(err)
	}
	return db, tbl
}

func contents(db *statedb.DB, tbl statedb.Table[*row]) map[string]int {
	out := map[string]int{}
	for r := range tbl.All(db.ReadTxn()) {
		out[r.Name] = r.Value
	}
	return out
}

// Sync writes exactly the rows that differ: new, changed and gone ones.
func TestSync(t *testing.T) {
	db, tbl := newTable(t)
	key := func(r *row) string { return r.Name }
	equal := func(a, b *row) bool { return *a == *b }
	for _, step := range []struct {
		rows    []*row
		changed int
		want    map[string]int
	}{
		{rows: []*row{{"a", 1}, {"b", 2}}, changed: 2, want: map[string]int{"a": 1, "b": 2}},
		{rows: []*row{{"a", 1}, {"b", 2}}, changed: 0, want: map[string]int{"a": 1, "b": 2}},
		{rows: []*row{{"a", 1}, {"b", 3}, {"c", 4}}, changed: 2, want: map[string]int{"a": 1, "b": 3, "c": 4}},
		{rows: []*row{{"c", 4}}, changed: 2, want: map[string]int{"c": 4}},
		{rows: nil, changed: 1, want: map[string]int{}},
	} {
		wtxn := db.WriteTxn(tbl)
		changed := Sync(wtxn, tbl, step.rows, key, equal)
		wtxn.Commit()
		got := contents(db, tbl)
		if changed != step.changed || len(got) != len(step.want) {
			t.Fatalf("rows %v: wrote %d, table %v; want %d, %v", step.rows, changed, got, step.changed, step.want)
		}
		for k, v := range step.want {
			if got[k] != v {
				t.Fatalf("rows %v: table %v, want %v", step.rows, got, step.want)
			}
		}
	}
}

// Loop runs a round again when an input it watched changes, and stops
// with its context.
func TestLoop(t *testing.T) {
	db, tbl := newTable(t)
	ctx, cancel := context.WithCancel(context.Background())
	rounds := make(chan int, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		Loop(ctx, db, func(txn statedb.ReadTxn, w *Watches) {
			rows, ch := tbl.AllWatch(txn)
			w.Add(ch)
			rounds <- len(statedb.Collect(rows))
		})
	}()
	next := func(want int) {
		t.Helper()
		select {
		case n := <-rounds:
			if n != want {
				t.Fatalf("round saw %d rows, want %d", n, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no round")
		}
	}
	next(0)
	wtxn := db.WriteTxn(tbl)
	_, _, _ = tbl.Insert(wtxn, &row{"a", 1})
	wtxn.Commit()
	next(1)
	cancel()
	<-done
}

// All and Get read and register the watch: a change of what they read
// closes one of the round's channels.
func TestAllAndGetWatch(t *testing.T) {
	db, tbl := newTable(t)
	wtxn := db.WriteTxn(tbl)
	_, _, _ = tbl.Insert(wtxn, &row{"a", 1})
	wtxn.Commit()

	var w Watches
	txn := db.ReadTxn()
	if n := len(statedb.Collect(All(&w, txn, tbl))); n != 1 {
		t.Fatalf("All read %d rows, want 1", n)
	}
	got, found := Get(&w, txn, tbl, nameIndex.Query("a"))
	if !found || got.Value != 1 {
		t.Fatalf("Get = %v, %v; want a=1", got, found)
	}
	if len(w) != 2 || Closed(w...) {
		t.Fatalf("%d watches, closed %v; want 2 open", len(w), Closed(w...))
	}
	wtxn = db.WriteTxn(tbl)
	_, _, _ = tbl.Insert(wtxn, &row{"a", 2})
	wtxn.Commit()
	// Commit closes the channels of what it changed before it returns.
	for i, ch := range w {
		select {
		case <-ch:
		default:
			t.Fatalf("watch %d did not close after the row changed", i)
		}
	}
}
