package nodeipam

import (
	"maps"
	"net/netip"
	"slices"

	"github.com/heraldlb/herald/tables"
)

// What the node's state knows of the pools: which of its CIDRs are still
// in their pool (the others drain), and what the allocator said it cannot
// give (so that an ADD waiting for a CIDR is answered at once).

// servesNew reports whether new addresses may come from the CIDR.
func (c *nodeCIDR) servesNew() bool { return !c.gone && !c.releasing && !c.draining }

// servesFrom reports whether a CIDR the node holds under pool is still in
// that pool, and the pool is not being deleted.
func (s *state) servesFrom(pool string, p netip.Prefix) bool {
	pl := s.pools[pool]
	if pl == nil || pl.Deleting {
		return false
	}
	fam := pl.Family(tables.FamilyOf(p.Addr()))
	return fam != nil && slices.ContainsFunc(fam.CIDRs, func(parent netip.Prefix) bool {
		return parent.Bits() <= p.Bits() && parent.Contains(p.Addr())
	})
}

// setPools takes the current pools and marks every CIDR whose pool no
// longer has it as draining (and one that is back in its pool as serving
// again). It returns the CIDRs that started draining.
func (s *state) setPools(pools map[string]*tables.PodIPPool) (draining []netip.Prefix) {
	s.pools = pools
	changed := false
	for p, c := range s.cidrs {
		d := !s.servesFrom(c.pool, p)
		if d == c.draining {
			continue
		}
		c.draining, changed = d, true
		if d {
			draining = append(draining, p)
		}
	}
	if changed {
		s.notify()
	}
	slices.SortFunc(draining, func(a, b netip.Prefix) int { return a.Addr().Compare(b.Addr()) })
	return draining
}

// setShortfalls takes what the allocator last said it cannot give this
// node; ADDs waiting for a CIDR look again.
func (s *state) setShortfalls(sfs []tables.PodCIDRShortfall) {
	next := map[poolFamily]tables.PodCIDRShortfall{}
	for _, sf := range sfs {
		next[poolFamily{sf.Pool, sf.Family}] = sf
	}
	if maps.Equal(next, s.shortfalls) {
		return
	}
	gens := map[poolFamily]int64{}
	for pf, sf := range next {
		if old, ok := s.shortfalls[pf]; ok && old == sf {
			gens[pf] = s.shortfallGens[pf]
		} else {
			gens[pf] = s.poolGeneration(pf.pool)
		}
	}
	s.shortfalls, s.shortfallGens = next, gens
	s.notify()
}

// currentShortfall returns what the allocator said it cannot give this
// node of the pool and family, unless the pool's spec changed since it
// said so: a pool extended a moment ago may serve, and its CIDR is on its
// way.
func (s *state) currentShortfall(pf poolFamily) (tables.PodCIDRShortfall, bool) {
	sf, ok := s.shortfalls[pf]
	if !ok || s.shortfallGens[pf] != s.poolGeneration(pf.pool) {
		return tables.PodCIDRShortfall{}, false
	}
	return sf, true
}

func (s *state) poolGeneration(pool string) int64 {
	if p := s.pools[pool]; p != nil {
		return p.Generation
	}
	return 0
}
