package gateways

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/heraldlb/herald/tables"
)

// route is what pick needs of one kernel route of the main table.
type route struct {
	dst     netip.Prefix // invalid: the default route (netlink leaves it nil)
	gateway netip.Addr   // of the route or of its first next hop
	device  string
	metric  int
}

// pick chooses the default route of each family: the one with a gateway
// and the lowest metric (the kernel's choice too), the lowest gateway
// among equals so that the choice does not depend on the dump's order.
func pick(routes []route) []*tables.BGPDefaultGateway {
	best := map[string]*tables.BGPDefaultGateway{}
	for _, r := range routes {
		if (r.dst.IsValid() && r.dst.Bits() != 0) || !r.gateway.IsValid() {
			continue
		}
		fam := "ipv4"
		if r.gateway.Is6() && !r.gateway.Is4In6() {
			fam = "ipv6"
		}
		gw := r.gateway.Unmap()
		if gw.Is6() && gw.IsLinkLocalUnicast() && r.device != "" {
			gw = gw.WithZone(r.device)
		}
		cand := &tables.BGPDefaultGateway{Family: fam, Gateway: gw, Device: r.device, Metric: r.metric}
		if b, ok := best[fam]; !ok || cand.Metric < b.Metric || (cand.Metric == b.Metric && cand.Gateway.Less(b.Gateway)) {
			best[fam] = cand
		}
	}
	out := make([]*tables.BGPDefaultGateway, 0, len(best))
	for _, g := range best {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *tables.BGPDefaultGateway) int {
		if a.Family < b.Family {
			return -1
		}
		if a.Family > b.Family {
			return 1
		}
		return 0
	})
	return out
}

// interest are the interfaces whose neighbours bgp-link-neighbors holds:
// those a cluster config names for a peer (autoDiscovery mode Unnumbered,
// peerInterface), and the interfaces of the default routes of the
// families an Unnumbered peer follows. Every cluster config's, whether it
// selects the node or not: a name that is not on the node costs nothing.
func interest(ccs []*tables.BGPClusterConfig, gws []*tables.BGPDefaultGateway) []string {
	var out []string
	for _, cc := range ccs {
		for _, inst := range cc.Instances {
			for _, p := range inst.Peers {
				switch {
				case p.Interface != "":
					out = append(out, p.Interface)
				case p.Unnumbered:
					for _, g := range gws {
						if g.Family == p.UnnumberedFamily && g.Device != "" {
							out = append(out, g.Device)
						}
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// neighbor is what neighborRows needs of one kernel neighbour entry.
type neighbor struct {
	device string
	addr   netip.Addr
	failed bool // the neighbour did not answer
	router bool
}

// neighborRows are the rows of bgp-link-neighbors: the IPv6 link-local
// neighbours that did not fail, once each, in order, with whether they are
// routers. It also returns the routers, for the next call (wasRouter, by
// "device/address"). A neighbour stays a router once it said so, while the
// kernel keeps it: the kernel clears the flag on a Neighbor Advertisement
// without it (a router whose IPv6 forwarding is off on the link sends
// those), and a Router Advertisement does not always set it again.
func neighborRows(entries []neighbor, wasRouter map[string]bool) ([]*tables.BGPLinkNeighbor, map[string]bool) {
	var out []*tables.BGPLinkNeighbor
	routers := map[string]bool{}
	for _, e := range entries {
		if e.device == "" || e.failed || !e.addr.Is6() || !e.addr.IsLinkLocalUnicast() {
			continue
		}
		n := &tables.BGPLinkNeighbor{Device: e.device, Address: e.addr.WithZone("")}
		n.Router = e.router || wasRouter[n.Key()]
		if n.Router {
			routers[n.Key()] = true
		}
		if !slices.ContainsFunc(out, func(o *tables.BGPLinkNeighbor) bool { return *o == *n }) {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b *tables.BGPLinkNeighbor) int {
		if c := strings.Compare(a.Device, b.Device); c != 0 {
			return c
		}
		return a.Address.Compare(b.Address)
	})
	return out, routers
}
