package noderoutes

import (
	"net/netip"
	"slices"

	"github.com/heraldlb/herald/tables"
)

// claims knows, for every pod CIDR, which nodes list it in their
// CiliumNodes, and decides the one route to it. A CIDR should be on one node
// only; when the allocator's promise is broken by hand (the same CIDR in two
// CiliumNodes) the route must still be one, stable, and never replace this
// node's own connected route to its pods.
type claims struct {
	self string
	// byDst: CIDR -> claiming node -> the route through it (nil: the node
	// has no InternalIP of the family, or is this node).
	byDst  map[netip.Prefix]map[string]*tables.NodeRoute
	byNode map[string][]netip.Prefix
}

func newClaims(self string) *claims {
	return &claims{self: self, byDst: map[netip.Prefix]map[string]*tables.NodeRoute{}, byNode: map[string][]netip.Prefix{}}
}

// set replaces what a node claims: its CIDRs, and the routes through it to
// them. It returns every CIDR whose route may have changed.
func (c *claims) set(node string, cidrs []netip.Prefix, routes []*tables.NodeRoute) (affected []netip.Prefix) {
	for _, dst := range c.byNode[node] {
		delete(c.byDst[dst], node)
		if len(c.byDst[dst]) == 0 {
			delete(c.byDst, dst)
		}
		affected = append(affected, dst)
	}
	delete(c.byNode, node)
	through := map[netip.Prefix]*tables.NodeRoute{}
	for _, r := range routes {
		through[r.Dst] = r
	}
	for _, dst := range cidrs {
		if c.byDst[dst] == nil {
			c.byDst[dst] = map[string]*tables.NodeRoute{}
		}
		c.byDst[dst][node] = through[dst]
		c.byNode[node] = append(c.byNode[node], dst)
		affected = append(affected, dst)
	}
	slices.SortFunc(affected, comparePrefix)
	return slices.Compact(affected)
}

// resolve returns the route this node wants to dst (nil: none) and, when
// several nodes claim it, their names.
//
//   - This node holds it: no route. Its gateway on the bridge gives the
//     kernel a connected route, which a route through another node would
//     replace (IPv4 routes of equal prefix replace each other).
//   - Other nodes only: through the first of them by name that has an
//     address to route through. Deterministic, so that every node routes
//     the same way and the route does not flap; the allocator reports the
//     CIDR claimed twice, and a person decides.
func (c *claims) resolve(dst netip.Prefix) (*tables.NodeRoute, []string) {
	holders := c.byDst[dst]
	names := make([]string, 0, len(holders))
	for n := range holders {
		names = append(names, n)
	}
	slices.Sort(names)
	var twice []string
	if len(names) > 1 {
		twice = names
	}
	if _, mine := holders[c.self]; mine {
		return nil, twice
	}
	for _, n := range names {
		if r := holders[n]; r != nil {
			return r, twice
		}
	}
	return nil, twice
}

func comparePrefix(a, b netip.Prefix) int {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c
	}
	return a.Bits() - b.Bits()
}
