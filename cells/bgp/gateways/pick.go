package gateways

import (
	"net/netip"
	"slices"

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
