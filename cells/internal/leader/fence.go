package leader

import (
	"context"
	"time"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/tables"
)

// WriteFence returns a context for a write decided in term, or an error
// when the write must not go out (see tables.Leadership.Fence).
type WriteFence func(ctx context.Context, term uint64) (context.Context, context.CancelFunc, error)

// Fence is the fence of the writes made under lease: each call reads this
// agent's standing in the election from the leadership table as it is at
// that moment, right before the write.
func Fence(db *statedb.DB, t statedb.Table[*tables.Leadership], lease string) WriteFence {
	return func(ctx context.Context, term uint64) (context.Context, context.CancelFunc, error) {
		l, _, _ := t.Get(db.ReadTxn(), tables.LeadershipLeaseIndex.Query(lease))
		return l.Fence(ctx, term, time.Now())
	}
}
