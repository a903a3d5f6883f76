package tables

import (
	"context"

	"github.com/cilium/statedb"
)

// Initializable is any table: it says whether its initial contents are in.
type Initializable interface {
	Initialized(statedb.ReadTxn) (bool, <-chan struct{})
}

// WaitInitialized waits until every table holds its initial contents (the
// reflectors' initial lists, the devices' first scan), so that a reader
// does not act on half a picture.
func WaitInitialized(ctx context.Context, db *statedb.DB, tbls ...Initializable) error {
	for {
		txn := db.ReadTxn()
		var pending <-chan struct{}
		for _, t := range tbls {
			if ok, w := t.Initialized(txn); !ok {
				pending = w
				break
			}
		}
		if pending == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-pending:
		}
	}
}
