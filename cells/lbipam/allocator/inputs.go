package allocator

import (
	"context"
	"time"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/internal/leader"
	"github.com/heraldlb/herald/tables"
)

// inputs are the changes a term feeds to its engine: the Services, the
// pools and, under multi-pool IPAM, the CiliumPodIPPools.
type inputs struct {
	services statedb.ChangeIterator[*tables.Service]
	pools    statedb.ChangeIterator[*tables.LBPool]
	podPools statedb.ChangeIterator[*tables.PodIPPool] // nil without multi-pool
	// caughtUp is how long the tables took to catch up with the API server.
	caughtUp time.Duration
}

// watchInputs waits until the tables hold what the API server holds (a
// new leader decides nothing from a partial view) and starts following
// their changes.
func watchInputs(ctx context.Context, p params) (*inputs, error) {
	names := []string{tables.ServicesTableName, tables.LBPoolsTableName}
	tbls := []statedb.TableMeta{p.Services, p.Pools}
	inits := []tables.Initializable{p.Services, p.Pools}
	if p.Agent.MultiPool() {
		names = append(names, tables.PodIPPoolsTableName)
		tbls = append(tbls, p.PodPools)
		inits = append(inits, p.PodPools)
	}
	if err := tables.WaitInitialized(ctx, p.DB, inits...); err != nil {
		return nil, err
	}
	start := time.Now()
	if err := leader.CatchUp(ctx, p.Freshness, names...); err != nil {
		return nil, err
	}
	in := &inputs{caughtUp: time.Since(start)}

	wtxn := p.DB.WriteTxn(tbls...)
	defer wtxn.Abort()
	var err error
	if in.services, err = p.Services.Changes(wtxn); err != nil {
		return nil, err
	}
	if in.pools, err = p.Pools.Changes(wtxn); err != nil {
		in.close()
		return nil, err
	}
	if p.Agent.MultiPool() {
		if in.podPools, err = p.PodPools.Changes(wtxn); err != nil {
			in.close()
			return nil, err
		}
	}
	wtxn.Commit()
	return in, nil
}

// applyPodPools gives the engine the CiliumPodIPPools that changed; the
// channel closes when more change (nil, never, without multi-pool).
func (in *inputs) applyPodPools(e *Engine, txn statedb.ReadTxn) <-chan struct{} {
	if in.podPools == nil {
		return nil
	}
	changes, watch := in.podPools.Next(txn)
	for ch := range changes {
		if ch.Deleted {
			e.DeletePodPool(ch.Object.Name)
		} else {
			e.UpsertPodPool(ch.Object)
		}
	}
	return watch
}

func (in *inputs) close() {
	for _, c := range []interface{ Close() }{in.services, in.pools, in.podPools} {
		if c != nil {
			c.Close()
		}
	}
}
