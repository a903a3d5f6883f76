// Package tablesync is the one way cells derive a table from others when the
// derivation is a join (every input row can change every output row, as
// the L2 candidates and the BGP routes are): read the inputs with their
// watch channels, derive all rows, write only the rows that changed, and
// do it again when an input changes. Writing only changes matters: the
// readers follow the table's Changes() and wake for real changes only.
package tablesync

import (
	"context"
	"iter"
	"reflect"

	"github.com/cilium/statedb"
)

// Watches collects the channels of the inputs one round read.
type Watches []<-chan struct{}

// Add watches one more input.
func (w *Watches) Add(ch <-chan struct{}) { *w = append(*w, ch) }

// All reads every row of table, and watches it.
func All[Obj any](w *Watches, txn statedb.ReadTxn, table statedb.Table[Obj]) iter.Seq2[Obj, statedb.Revision] {
	rows, ch := table.AllWatch(txn)
	w.Add(ch)
	return rows
}

// Get reads the row q finds in table, and watches it.
func Get[Obj any](w *Watches, txn statedb.ReadTxn, table statedb.Table[Obj], q statedb.Query[Obj]) (Obj, bool) {
	obj, _, ch, found := table.GetWatch(txn, q)
	w.Add(ch)
	return obj, found
}

// Loop runs round on a fresh snapshot of db, then again whenever one of
// the inputs it watched changes, until ctx ends.
func Loop(ctx context.Context, db *statedb.DB, round func(txn statedb.ReadTxn, w *Watches)) {
	for {
		var w Watches
		round(db.ReadTxn(), &w)
		if !w.wait(ctx) {
			return
		}
	}
}

// Closed reports whether any of the channels has closed, without waiting.
func Closed(watches ...<-chan struct{}) bool {
	for _, w := range watches {
		select {
		case <-w:
			return true
		default:
		}
	}
	return false
}

// wait blocks until one of the channels closes (true) or ctx ends
// (false).
func (w Watches) wait(ctx context.Context) bool {
	cases := make([]reflect.SelectCase, 0, len(w)+1)
	cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ctx.Done())})
	for _, ch := range w {
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)})
	}
	i, _, _ := reflect.Select(cases)
	return i != 0
}

// Sync makes table hold exactly rows, by key, inserting and deleting only
// the rows that differ (equal compares an old row with its new one). It
// returns how many rows it wrote.
func Sync[Obj any, K comparable](wtxn statedb.WriteTxn, table statedb.RWTable[Obj], rows []Obj, key func(Obj) K, equal func(a, b Obj) bool) int {
	want := make(map[K]Obj, len(rows))
	for _, r := range rows {
		want[key(r)] = r
	}
	changed := 0
	for old := range table.All(wtxn) {
		k := key(old)
		if r, ok := want[k]; ok {
			if equal(old, r) {
				delete(want, k)
			}
			continue
		}
		_, _, _ = table.Delete(wtxn, old)
		changed++
	}
	for _, r := range rows {
		if _, ok := want[key(r)]; ok {
			_, _, _ = table.Insert(wtxn, r)
			changed++
		}
	}
	return changed
}
