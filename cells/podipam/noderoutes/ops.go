package noderoutes

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"net"
	"net/netip"

	"github.com/cilium/statedb"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/heraldlb/herald/tables"
)

// routeOps makes the kernel's routes with protocol NodeRouteProtocol equal
// to the node-routes table.
type routeOps struct {
	log *slog.Logger
}

// errNotOnLink: the other node is not directly reachable, so a route through
// it would go nowhere (or through a router that does not know the CIDR).
var errNotOnLink = errors.New("not on a directly connected network")

// Update installs one route. The next hop must be reachable without a
// gateway: auto-direct-node-routes is for nodes on one L2 segment.
func (o *routeOps) Update(_ context.Context, _ statedb.ReadTxn, _ statedb.Revision, r *tables.NodeRoute) error {
	got, err := netlink.RouteGet(r.Via.AsSlice())
	if err != nil {
		return fmt.Errorf("route to node %s (%s): %w", r.Node, r.Via, err)
	}
	if len(got) == 0 {
		return fmt.Errorf("node %s (%s): no route to it", r.Node, r.Via)
	}
	if got[0].Gw != nil {
		return fmt.Errorf("node %s (%s) is reached through gateway %s, %w: no direct route to its pod CIDR %s", r.Node, r.Via, got[0].Gw, errNotOnLink, r.Dst)
	}
	route := o.kernelRoute(r.Dst)
	route.Gw = net.IP(r.Via.AsSlice())
	route.LinkIndex = got[0].LinkIndex
	if err := netlink.RouteReplace(route); err != nil {
		return fmt.Errorf("route %s via %s: %w", r.Dst, r.Via, err)
	}
	return nil
}

func (o *routeOps) Delete(_ context.Context, _ statedb.ReadTxn, _ statedb.Revision, r *tables.NodeRoute) error {
	err := netlink.RouteDel(o.kernelRoute(r.Dst))
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("deleting route %s: %w", r.Dst, err)
	}
	return nil
}

// Prune removes Herald's routes the table does not want (left by an
// earlier run for nodes that went meanwhile).
func (o *routeOps) Prune(_ context.Context, _ statedb.ReadTxn, want iter.Seq2[*tables.NodeRoute, statedb.Revision]) error {
	wanted := map[netip.Prefix]bool{}
	for r := range want {
		wanted[r.Dst] = true
	}
	for _, family := range []int{netlink.FAMILY_V4, netlink.FAMILY_V6} {
		routes, err := netlink.RouteListFiltered(family, &netlink.Route{Protocol: tables.NodeRouteProtocol}, netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			return err
		}
		for _, r := range routes {
			if r.Dst == nil {
				continue
			}
			dst, ok := prefixOf(r.Dst)
			if !ok || wanted[dst] {
				continue
			}
			o.log.Info("Removing a stale route to a pod CIDR", "dst", dst)
			if err := netlink.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
				return err
			}
		}
	}
	return nil
}

func (o *routeOps) kernelRoute(dst netip.Prefix) *netlink.Route {
	ones := dst.Bits()
	return &netlink.Route{
		Dst:      &net.IPNet{IP: net.IP(dst.Addr().AsSlice()), Mask: net.CIDRMask(ones, dst.Addr().BitLen())},
		Protocol: tables.NodeRouteProtocol,
	}
}

func prefixOf(n *net.IPNet) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(n.IP)
	if !ok {
		return netip.Prefix{}, false
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a.Unmap(), ones), true
}
