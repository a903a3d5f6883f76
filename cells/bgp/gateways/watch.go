package gateways

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"reflect"

	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/job"
	"github.com/cilium/statedb"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/heraldlb/herald/cells/bgp/bgpconfig"
	"github.com/heraldlb/herald/cells/internal/tablesync"
	"github.com/heraldlb/herald/tables"
)

type params struct {
	cell.In

	BGP            bgpconfig.Config
	DB             *statedb.DB
	Table          statedb.RWTable[*tables.BGPDefaultGateway]
	Neighbors      statedb.RWTable[*tables.BGPLinkNeighbor]
	ClusterConfigs statedb.Table[*tables.BGPClusterConfig]
	Jobs           job.Group
	Log            *slog.Logger
}

func registerWatcher(p params) {
	if !p.BGP.EnableBGPControlPlane {
		return
	}
	wtxn := p.DB.WriteTxn(p.Table, p.Neighbors)
	initDone := p.Table.RegisterInitializer(wtxn, "netlink-routes")
	neighborsDone := p.Neighbors.RegisterInitializer(wtxn, "netlink-neighbors")
	wtxn.Commit()
	w := &watcher{params: p, initDone: initDone}
	p.Jobs.Add(job.OneShot("watch-routes", w.run))
	nw := &neighborWatcher{params: p, table: p.Neighbors, initDone: neighborsDone}
	p.Jobs.Add(job.OneShot("watch-link-neighbors", nw.run))
}

type watcher struct {
	params
	initDone func(statedb.WriteTxn) // nil once called
}

// run keeps the table equal to the default routes until the agent stops:
// subscribed to route changes, it lists the main table again after each
// burst of them (a route change is rare, a full list of a host's routes
// cheap). A failed subscription is renewed.
func (w *watcher) run(ctx context.Context, health cell.Health) error {
	return keepFollowing(ctx, health, w.Log, "following the default routes", w.follow)
}

func (w *watcher) follow(ctx context.Context, health cell.Health) error {
	updates := make(chan netlink.RouteUpdate, 64)
	onError, failed := subscriptionErrors()
	done := make(chan struct{})
	defer close(done)
	err := netlink.RouteSubscribeWithOptions(updates, done, netlink.RouteSubscribeOptions{ErrorCallback: onError})
	if err != nil {
		return fmt.Errorf("subscribing to routes: %w", err)
	}
	for {
		if err := w.sync(); err != nil {
			return err
		}
		health.OK("following the default routes")
		select {
		case <-ctx.Done():
			return nil
		case err := <-failed:
			return err
		case _, ok := <-updates:
			if !ok {
				return fmt.Errorf("route subscription ended")
			}
		}
		drain(updates)
	}
}

// drain takes the rest of a burst of updates: one listing serves them all.
func drain(updates <-chan netlink.RouteUpdate) {
	for {
		select {
		case <-updates:
		default:
			return
		}
	}
}

// sync lists the main table's routes of both families and writes the
// default routes that changed.
func (w *watcher) sync() error {
	var routes []route
	for _, fam := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		rs, err := netlink.RouteListFiltered(fam, &netlink.Route{Table: unix.RT_TABLE_MAIN}, netlink.RT_FILTER_TABLE)
		if err != nil {
			return fmt.Errorf("listing routes: %w", err)
		}
		for _, r := range rs {
			routes = append(routes, fromNetlink(r))
		}
	}
	rows := pick(routes)
	wtxn := w.DB.WriteTxn(w.Table)
	changed := tablesync.Sync(wtxn, w.Table, rows, func(g *tables.BGPDefaultGateway) string { return g.Family },
		func(a, b *tables.BGPDefaultGateway) bool { return reflect.DeepEqual(a, b) })
	if w.initDone != nil {
		w.initDone(wtxn)
		w.initDone = nil
	}
	wtxn.Commit()
	if changed > 0 {
		w.Log.Info("Default routes", "gateways", rows)
	}
	return nil
}

func fromNetlink(r netlink.Route) route {
	out := route{metric: r.Priority}
	if r.Dst != nil {
		if p, ok := prefixOf(r.Dst.IP, r.Dst.Mask); ok {
			out.dst = p
		}
	}
	gw, ifindex := r.Gw, r.LinkIndex
	if gw == nil && len(r.MultiPath) > 0 {
		gw, ifindex = r.MultiPath[0].Gw, r.MultiPath[0].LinkIndex
	}
	if a, ok := netip.AddrFromSlice(gw); ok {
		out.gateway = a.Unmap()
	}
	if l, err := netlink.LinkByIndex(ifindex); err == nil {
		out.device = l.Attrs().Name
	}
	return out
}

func prefixOf(ip net.IP, mask net.IPMask) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(ip)
	ones, bits := mask.Size()
	if !ok || bits == 0 {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a.Unmap(), ones), true
}
