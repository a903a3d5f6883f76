package leader

import (
	"context"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/tables"
)

// StatusRows are how a status table's rows carry their reconciliation
// status (the functions given to reconciler.Register).
type StatusRows[Obj any] struct {
	// Name names the job (requeue-NAME), one per table of a module.
	Name  string
	Table statedb.RWTable[Obj]
	Clone func(Obj) Obj
	Get   func(Obj) reconciler.Status
	Set   func(Obj, reconciler.Status) Obj
}

// RequeueOnResume adds a job that marks the failed rows of a leader's
// status table pending again whenever its writes may go out again: a term
// starts, or a renewal succeeds after the term lapsed (its renewals failed,
// the API server was away). Their writes failed meanwhile, fenced or
// refused, and each failure doubled its retry delay (up to 30 s): without
// this, a status written just before an API-server outage went out, and
// the leader's /healthz turned OK, up to that long after the outage.
func RequeueOnResume[Obj any](jg job.Group, db *statedb.DB, leadership statedb.Table[*tables.Leadership], lease string, rows StatusRows[Obj]) {
	jg.Add(job.OneShot("requeue-"+rows.Name, func(ctx context.Context, _ cell.Health) error {
		var prev *tables.Leadership
		for {
			l, _, watch, _ := leadership.GetWatch(db.ReadTxn(), tables.LeadershipLeaseIndex.Query(lease))
			if now := time.Now(); resumed(prev, l, now) {
				requeueFailed(db, rows)
			}
			prev = l
			select {
			case <-ctx.Done():
				return nil
			case <-watch:
			}
		}
	}))
}

// resumed reports whether writes may go out again at now, under l, after
// they could not under prev (the row as last seen): a new term, or the same
// one renewed after its validity had run out.
func resumed(prev, l *tables.Leadership, now time.Time) bool {
	if l == nil || !l.Leading || !now.Before(l.ValidUntil) {
		return false
	}
	return prev == nil || !prev.Leading || prev.Term != l.Term || !now.Before(prev.ValidUntil)
}

// requeueFailed marks every row in error pending, so that the reconciler
// tries it at once.
func requeueFailed[Obj any](db *statedb.DB, rows StatusRows[Obj]) int {
	wtxn := db.WriteTxn(rows.Table)
	defer wtxn.Abort()
	var failed []Obj
	for obj := range rows.Table.All(wtxn) {
		if rows.Get(obj).Kind == reconciler.StatusKindError {
			failed = append(failed, obj)
		}
	}
	for _, obj := range failed {
		_, _, _ = rows.Table.Insert(wtxn, rows.Set(rows.Clone(obj), reconciler.StatusPending()))
	}
	wtxn.Commit()
	return len(failed)
}
