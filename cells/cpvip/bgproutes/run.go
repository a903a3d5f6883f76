package bgproutes

import (
	"context"
	"log/slog"
	"reflect"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"

	"github.com/heraldlb/herald/cells/cpvip/cpvipconfig"
	"github.com/heraldlb/herald/cells/internal/tablesync"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	Parsed    cpvipconfig.Parsed
	Log       *slog.Logger
	DB        *statedb.DB
	Jobs      job.Group
	Announce  statedb.Table[*tables.L2AnnounceEntry]
	Instances statedb.RWTable[*tables.BGPInstance]
	Routes    statedb.RWTable[*tables.BGPRoute]
}

func register(p params) error {
	cfg := p.Parsed
	wtxn := p.DB.WriteTxn(p.Instances, p.Routes)
	instDone := p.Instances.RegisterInitializer(wtxn, "control-plane-bgp")
	routesDone := p.Routes.RegisterInitializer(wtxn, "control-plane-bgp")
	if cfg.BGP == nil {
		// No BGP: the tables stay empty (the speaker does not run).
		instDone(wtxn)
		routesDone(wtxn)
		wtxn.Commit()
		return nil
	}
	_, _, _ = p.Instances.Insert(wtxn, instance(cfg.BGP, cfg.VIPs))
	instDone(wtxn)
	wtxn.Commit()
	p.Log.Info("Advertising the control-plane VIPs over BGP from the owner", "local-asn", cfg.BGP.LocalASN,
		"router-id", cfg.BGP.RouterID, "peers", cfg.BGP.Peers)
	p.Jobs.Add(job.OneShot("routes", func(ctx context.Context, _ cell.Health) error {
		return follow(ctx, p, cfg.BGP, routesDone)
	}))
	return nil
}

// follow keeps bgp-routes equal to routes() of the l2-announce entries.
func follow(ctx context.Context, p params, b *cpvipconfig.BGP, done func(statedb.WriteTxn)) error {
	tablesync.Loop(ctx, p.DB, func(txn statedb.ReadTxn, w *tablesync.Watches) {
		rows := routes(b, statedb.Collect(tablesync.All(w, txn, p.Announce)))
		wtxn := p.DB.WriteTxn(p.Routes)
		tablesync.Sync(wtxn, p.Routes, rows, (*tables.BGPRoute).Key,
			func(a, b *tables.BGPRoute) bool { return reflect.DeepEqual(a, b) })
		if done != nil {
			done(wtxn)
			done = nil
		}
		wtxn.Commit()
	})
	return nil
}
