package policystatus

import (
	"context"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/cells/ground/agentconfig"
	"github.com/heraldlb/herald/cells/l2/l2config"
	"github.com/heraldlb/herald/tables"
)

type deriveParams struct {
	cell.In

	Agent    agentconfig.Config
	L2       l2config.Config
	DB       *statedb.DB
	Jobs     job.Group
	Policies statedb.Table[*tables.L2Policy]
	Status   statedb.RWTable[*tables.L2PolicyStatus]
}

// registerDerivation keeps one l2-policy-status row per policy, from the
// changes of l2-policies: a row is rewritten (and so reconciled again)
// only when what the status should say changes.
func registerDerivation(p deriveParams) {
	if !p.L2.EnableL2Announcements {
		return
	}
	p.Jobs.Add(job.OneShot("derive-policy-status", func(ctx context.Context, _ cell.Health) error {
		wtxn := p.DB.WriteTxn(p.Policies)
		changes, err := p.Policies.Changes(wtxn)
		wtxn.Commit()
		if err != nil {
			return err
		}
		defer changes.Close()
		for {
			wtxn := p.DB.WriteTxn(p.Status)
			batch, watch := changes.Next(wtxn)
			for ch := range batch {
				apply(p.Status, wtxn, ch)
			}
			wtxn.Commit()
			select {
			case <-ctx.Done():
				return nil
			case <-watch:
			}
		}
	}))
}

// apply turns one change of a policy into its row.
func apply(status statedb.RWTable[*tables.L2PolicyStatus], wtxn statedb.WriteTxn, ch statedb.Change[*tables.L2Policy]) {
	want := tables.L2PolicyStatusOf(ch.Object)
	old, _, had := status.Get(wtxn, tables.L2PolicyStatusIndex.Query(want.Policy))
	switch {
	case ch.Deleted:
		if had {
			_, _, _ = status.Delete(wtxn, old)
		}
	case had && old.Same(want):
	default:
		want.Status = reconciler.StatusPending()
		_, _, _ = status.Insert(wtxn, want)
	}
}
