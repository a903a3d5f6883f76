package noderoutes

import (
	"context"
	"log/slog"
	"net/netip"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb/reconciler"

	"github.com/heraldlb/herald/tables"
)

// deriver keeps node-routes equal to what the other nodes' CiliumNodes and
// Nodes call for, recomputing only the nodes that changed.
type deriver struct {
	params
	self string
	log  *slog.Logger
	// warned remembers nodes already reported without an address of a
	// family, so that the log says it once.
	warned map[string]bool
}

func (d *deriver) job() job.Job {
	return job.OneShot("derive-routes", func(ctx context.Context, health cell.Health) error {
		d.warned = map[string]bool{}
		wtxn := d.Reconcile.DB.WriteTxn(d.CiliumNodes, d.Nodes)
		cnChanges, err := d.CiliumNodes.Changes(wtxn)
		if err != nil {
			wtxn.Abort()
			return err
		}
		nodeChanges, err := d.Nodes.Changes(wtxn)
		if err != nil {
			wtxn.Abort()
			return err
		}
		wtxn.Commit()
		defer cnChanges.Close()
		defer nodeChanges.Close()
		health.OK("watching")
		for {
			txn := d.Reconcile.DB.ReadTxn()
			touched := map[string]bool{}
			cns, cnWatch := cnChanges.Next(txn)
			for ch := range cns {
				touched[ch.Object.Name] = true
			}
			nodes, nodeWatch := nodeChanges.Next(txn)
			for ch := range nodes {
				touched[ch.Object.Name] = true
			}
			if len(touched) > 0 {
				d.update(touched)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-cnWatch:
			case <-nodeWatch:
			}
		}
	})
}

// update recomputes the routes of the named nodes.
func (d *deriver) update(names map[string]bool) {
	wtxn := d.Reconcile.DB.WriteTxn(d.Routes)
	defer wtxn.Commit()
	for name := range names {
		var want []*tables.NodeRoute
		if name != d.self {
			cn, _, _ := d.CiliumNodes.Get(wtxn, tables.CiliumNodeNameIndex.Query(name))
			node, _, _ := d.Nodes.Get(wtxn, tables.NodeNameIndex.Query(name))
			var missing []tables.Family
			want, missing = routesOf(cn, node)
			if len(missing) > 0 && !d.warned[name] {
				d.warned[name] = true
				d.log.Warn("Node has pod CIDRs but no InternalIP of their family: no route to them", "node", name, "families", missing)
			}
		}
		wanted := map[netip.Prefix]*tables.NodeRoute{}
		for _, r := range want {
			wanted[r.Dst] = r
		}
		// Drop this node's routes it no longer wants.
		var stale []*tables.NodeRoute
		for r := range d.Routes.List(wtxn, tables.NodeRouteNodeIndex.Query(name)) {
			if wanted[r.Dst] == nil {
				stale = append(stale, r)
			}
		}
		for _, r := range stale {
			_, _, _ = d.Routes.Delete(wtxn, r)
		}
		for _, r := range want {
			if old, _, ok := d.Routes.Get(wtxn, tables.NodeRouteDstIndex.Query(r.Dst)); ok && old.Via == r.Via && old.Node == r.Node && old.Pool == r.Pool {
				continue
			}
			r.Status = reconciler.StatusPending()
			_, _, _ = d.Routes.Insert(wtxn, r)
		}
	}
}
