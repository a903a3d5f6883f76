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
	// family, warnedTwice CIDRs reported on several nodes, so that the log
	// says it once.
	warned      map[string]bool
	warnedTwice map[netip.Prefix]bool
	claims      *claims
}

func (d *deriver) job() job.Job {
	return job.OneShot("derive-routes", func(ctx context.Context, health cell.Health) error {
		d.warned, d.warnedTwice = map[string]bool{}, map[netip.Prefix]bool{}
		d.claims = newClaims(d.self)
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

// update takes in what the named nodes now claim and rewrites the routes
// to every CIDR that changed hands.
func (d *deriver) update(names map[string]bool) {
	wtxn := d.Reconcile.DB.WriteTxn(d.Routes)
	defer wtxn.Commit()
	var affected []netip.Prefix
	for name := range names {
		cn, _, _ := d.CiliumNodes.Get(wtxn, tables.CiliumNodeNameIndex.Query(name))
		var routes []*tables.NodeRoute
		if name != d.self {
			node, _, _ := d.Nodes.Get(wtxn, tables.NodeNameIndex.Query(name))
			var missing []tables.Family
			routes, missing = routesOf(cn, node)
			if len(missing) > 0 && !d.warned[name] {
				d.warned[name] = true
				d.log.Warn("Node has pod CIDRs but no InternalIP of their family: no route to them", "node", name, "families", missing)
			}
		}
		affected = append(affected, d.claims.set(name, cidrsOf(cn), routes)...)
	}
	for _, dst := range affected {
		want, twice := d.claims.resolve(dst)
		if len(twice) > 0 && !d.warnedTwice[dst] {
			d.warnedTwice[dst] = true
			d.log.Warn("Pod CIDR listed in several CiliumNodes; routing it through the first by name (or not at all if this node is one of them)", "cidr", dst, "nodes", twice)
		} else if len(twice) == 0 {
			delete(d.warnedTwice, dst)
		}
		old, _, ok := d.Routes.Get(wtxn, tables.NodeRouteDstIndex.Query(dst))
		switch {
		case want == nil && ok:
			_, _, _ = d.Routes.Delete(wtxn, old)
		case want == nil:
		case ok && old.Via == want.Via && old.Node == want.Node && old.Pool == want.Pool:
		default:
			r := *want
			r.Status = reconciler.StatusPending()
			_, _, _ = d.Routes.Insert(wtxn, &r)
		}
	}
}

// cidrsOf lists the CIDRs a CiliumNode holds.
func cidrsOf(cn *tables.CiliumNode) []netip.Prefix {
	if cn == nil {
		return nil
	}
	var out []netip.Prefix
	for _, a := range cn.Allocated {
		out = append(out, a.CIDRs...)
	}
	return out
}
