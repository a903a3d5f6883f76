package cidrallocator

import (
	"context"
	"time"

	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/internal/leader"
	"github.com/heraldlb/herald/tables"
)

// inputs are the changes a term feeds to its engine.
type inputs struct {
	pools       statedb.ChangeIterator[*tables.PodIPPool]
	ciliumNodes statedb.ChangeIterator[*tables.CiliumNode]
	nodes       statedb.ChangeIterator[*tables.Node]
	// lbPools: a pod pool overlapping an older LB pool is conflicting
	// (lbpools.go).
	lbPools statedb.ChangeIterator[*tables.LBPool]
	// caughtUp is how long the tables took to catch up with the API server.
	caughtUp time.Duration
}

// watchInputs waits until the tables hold what the API server holds (a
// new leader decides nothing from a partial view) and starts following
// their changes.
func watchInputs(ctx context.Context, p params) (*inputs, error) {
	start := time.Now()
	if err := leader.CatchUp(ctx, p.Freshness,
		tables.PodIPPoolsTableName, tables.CiliumNodesTableName, tables.NodesTableName, tables.LBPoolsTableName); err != nil {
		return nil, err
	}
	in := &inputs{caughtUp: time.Since(start)}

	wtxn := p.DB.WriteTxn(p.Pools, p.CiliumNodes, p.Nodes, p.LBPools)
	defer wtxn.Abort()
	var err error
	if in.pools, err = p.Pools.Changes(wtxn); err != nil {
		return nil, err
	}
	if in.ciliumNodes, err = p.CiliumNodes.Changes(wtxn); err == nil {
		if in.nodes, err = p.Nodes.Changes(wtxn); err == nil {
			in.lbPools, err = p.LBPools.Changes(wtxn)
		}
	}
	if err != nil {
		in.close()
		return nil, err
	}
	wtxn.Commit()
	return in, nil
}

func (in *inputs) close() {
	for _, c := range []interface{ Close() }{in.pools, in.ciliumNodes, in.nodes, in.lbPools} {
		if c != nil {
			c.Close()
		}
	}
}
