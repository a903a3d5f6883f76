package gateways

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/cilium/hive/cell"
	"github.com/cilium/statedb"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/heraldlb/herald/cells/internal/tablesync"
	"github.com/heraldlb/herald/tables"
)

// neighborWatcher keeps bgp-link-neighbors equal to the kernel's IPv6
// link-local neighbours on the interfaces BGP unnumbered peers can be on
// (interest): where such a peer is found. Only those interfaces, because
// the other link-local neighbours (one per pod interface on a busy node)
// come and go with the pods and would re-derive the node's BGP
// configuration each time.
type neighborWatcher struct {
	params
	table    statedb.RWTable[*tables.BGPLinkNeighbor]
	initDone func(statedb.WriteTxn) // nil once called
	// wasRouter: the neighbours that said they are routers, while the
	// kernel keeps them (see neighborRows).
	wasRouter map[string]bool
	// watched are the interfaces of interest by index, as of the last
	// listing: updates of other interfaces' neighbours are ignored, unless
	// an interface of interest was missing (it may have appeared since).
	watched map[int]string
	missing bool
}

// relistPause spaces the listings of a busy neighbour table: entries
// change state (reachable, stale, probe) all the time.
const relistPause = 200 * time.Millisecond

func (w *neighborWatcher) run(ctx context.Context, health cell.Health) error {
	// The interfaces of interest come from the cluster configs: list
	// nothing before they are known.
	if err := tables.WaitInitialized(ctx, w.DB, w.ClusterConfigs); err != nil {
		return nil
	}
	return keepFollowing(ctx, health, w.Log, "following the IPv6 link-local neighbours", w.follow)
}

func (w *neighborWatcher) follow(ctx context.Context, health cell.Health) error {
	updates := make(chan netlink.NeighUpdate, 64)
	onError, failed := subscriptionErrors()
	done := make(chan struct{})
	defer close(done)
	err := netlink.NeighSubscribeWithOptions(updates, done, netlink.NeighSubscribeOptions{ErrorCallback: onError})
	if err != nil {
		return fmt.Errorf("subscribing to neighbours: %w", err)
	}
	for {
		txn := w.DB.ReadTxn()
		ccs, ccsChanged := w.ClusterConfigs.AllWatch(txn)
		gws, gwsChanged := w.Table.AllWatch(txn)
		devices := interest(statedb.Collect(ccs), statedb.Collect(gws))
		if err := w.sync(devices); err != nil {
			return err
		}
		health.OK(fmt.Sprintf("following the IPv6 link-local neighbours of %d interfaces", len(devices)))
		for relevant := false; !relevant; {
			select {
			case <-ctx.Done():
				return nil
			case err := <-failed:
				return err
			case <-ccsChanged:
				relevant = true
			case <-gwsChanged:
				relevant = true
			case u, ok := <-updates:
				if !ok {
					return fmt.Errorf("neighbour subscription ended")
				}
				relevant = w.note(u)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(relistPause):
		}
		w.drain(updates)
	}
}

func (w *neighborWatcher) drain(updates <-chan netlink.NeighUpdate) {
	for {
		select {
		case u := <-updates:
			w.note(u)
		default:
			return
		}
	}
}

// note records a neighbour that says it is a router, from the update
// itself: the flag can be gone again by the next listing (the router
// answers the node's Neighbor Solicitation without it a moment after its
// Router Advertisement). It reports whether the update calls for a
// listing: an IPv6 link-local neighbour of an interface of interest, or of
// any interface while one of interest is missing.
func (w *neighborWatcher) note(u netlink.NeighUpdate) bool {
	a, ok := netip.AddrFromSlice(u.IP)
	if !ok || u.Family != unix.AF_INET6 || !a.IsLinkLocalUnicast() {
		return false
	}
	name, watched := w.watched[u.LinkIndex]
	if !watched {
		return w.missing
	}
	if u.Type == unix.RTM_NEWNEIGH && u.Flags&netlink.NTF_ROUTER != 0 {
		if w.wasRouter == nil {
			w.wasRouter = map[string]bool{}
		}
		w.wasRouter[(&tables.BGPLinkNeighbor{Device: name, Address: a.WithZone("")}).Key()] = true
	}
	return true
}

// sync lists the IPv6 neighbours of the devices and writes the link-local
// ones.
func (w *neighborWatcher) sync(devices []string) error {
	var entries []neighbor
	w.watched, w.missing = map[int]string{}, false
	for _, name := range devices {
		link, err := netlink.LinkByName(name)
		if err != nil {
			w.missing = true // not on this node, or not yet
			continue
		}
		w.watched[link.Attrs().Index] = name
		neighs, err := netlink.NeighList(link.Attrs().Index, netlink.FAMILY_V6)
		if err != nil {
			return fmt.Errorf("listing the neighbours of %s: %w", name, err)
		}
		for _, n := range neighs {
			if a, ok := netip.AddrFromSlice(n.IP); ok {
				entries = append(entries, neighbor{device: name, addr: a, failed: n.State&netlink.NUD_FAILED != 0,
					router: n.Flags&netlink.NTF_ROUTER != 0})
			}
		}
	}
	var rows []*tables.BGPLinkNeighbor
	rows, w.wasRouter = neighborRows(entries, w.wasRouter)
	wtxn := w.DB.WriteTxn(w.table)
	changed := tablesync.Sync(wtxn, w.table, rows, (*tables.BGPLinkNeighbor).Key,
		func(a, b *tables.BGPLinkNeighbor) bool { return *a == *b })
	if w.initDone != nil {
		w.initDone(wtxn)
		w.initDone = nil
	}
	wtxn.Commit()
	if changed > 0 {
		w.Log.Info("IPv6 link-local neighbours of BGP unnumbered interfaces", "neighbors", rows)
	}
	return nil
}
