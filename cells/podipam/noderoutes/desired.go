package noderoutes

import (
	"net/netip"
	"slices"

	"github.com/heraldlb/herald/tables"
)

// routesOf returns the routes this node wants to another node's pod CIDRs:
// each CIDR through that node's InternalIP of the same family. A node
// without such an address gets no route for that family (nothing could
// carry it), and the reason is returned.
func routesOf(cn *tables.CiliumNode, node *tables.Node) (routes []*tables.NodeRoute, missing []tables.Family) {
	if cn == nil {
		return nil, nil
	}
	for _, a := range cn.Allocated {
		for _, c := range a.CIDRs {
			f := tables.FamilyOf(c.Addr())
			var via netip.Addr
			ok := false
			if node != nil {
				via, ok = node.InternalIP(f)
			}
			if !ok {
				if !slices.Contains(missing, f) {
					missing = append(missing, f)
				}
				continue
			}
			routes = append(routes, &tables.NodeRoute{Dst: c, Via: via, Node: cn.Name, Pool: a.Pool})
		}
	}
	return routes, missing
}
