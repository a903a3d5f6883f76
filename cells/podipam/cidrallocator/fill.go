package cidrallocator

import (
	"fmt"
	"net/netip"

	"github.com/heraldlb/herald/tables"
)

// Giving a node CIDRs of a pool: as many as cover what it asks for, each
// the first free one of the pool's maskSize.

// fill gives the node CIDRs of the pool until their usable addresses cover
// its demand, in each family. It returns what it could not do. Every CIDR
// it adds holds at least one usable address (a maskSize whose CIDRs hold
// none is refused): the loop ends, and one node never takes a whole pool
// of CIDRs that add nothing.
func (e *Engine) fill(n *nodeState, dem tables.PoolDemand) (errs []string) {
	p := e.pools[dem.Pool]
	for _, f := range []tables.Family{tables.IPv4, tables.IPv6} {
		need := dem.Of(f)
		if need <= 0 {
			continue
		}
		switch {
		case p == nil:
			return append(errs, fmt.Sprintf("pool %q does not exist", dem.Pool))
		case p.row.Family(f) == nil:
			errs = append(errs, fmt.Sprintf("pool %q has no %s CIDRs", dem.Pool, f))
			continue
		}
		// Only CIDRs still in the pool count: a removed one drains (its
		// node hands out nothing more from it), so the node needs room
		// elsewhere.
		have, count := uint64(0), 0
		for _, c := range n.holdingsOf(dem.Pool, f) {
			if inPool(p.row.Family(f), c) {
				have += tables.PodCIDRUsable(c, usableLimit)
				count++
			}
		}
		maskProblem := tables.PodCIDRMaskSizeProblem(f, p.row.Family(f).MaskSize)
		tooLarge := ""
		if maskProblem == "" {
			tooLarge = demandTooLarge(f, p.row.Family(f).MaskSize, uint64(need), have, count)
		}
		for have < uint64(need) {
			var (
				cause  tables.ShortfallCause
				detail string
				c      netip.Prefix
				ok     bool
			)
			switch {
			case p.row.Deleting:
				cause = tables.ShortfallDeleting
			case p.conflict != "":
				cause, detail = tables.ShortfallConflict, p.conflict
			case maskProblem != "":
				cause, detail = tables.ShortfallMaskSize, maskProblem
			case tooLarge != "":
				cause, detail = tables.ShortfallTooLarge, tooLarge
			default:
				if c, ok = e.nextFree(p, f); !ok {
					cause = tables.ShortfallExhausted
					detail = fmt.Sprintf("no free /%d is left in its %s CIDRs", p.row.Family(f).MaskSize, f)
					short := fmt.Sprintf("%s needs %d %s addresses, has %d", n.name, need, f, have)
					if prev := p.exhausted[n.name]; prev != "" {
						short = prev + "; " + short // both families short
					}
					p.exhausted[n.name] = short
				}
			}
			if cause != "" {
				errs = append(errs, tables.NewPodCIDRShortfall(dem.Pool, f, cause, detail, uint64(need), have).String())
				break
			}
			h := holding{prefix: c, node: n.name, pool: dem.Pool}
			n.pending = append(n.pending, h)
			n.current = append(n.current, h)
			e.held.add(h)
			have += tables.PodCIDRUsable(c, usableLimit)
		}
	}
	return errs
}

// demandTooLarge says why covering need takes the node more CIDRs of the
// pool's family than tables.MaxNodePoolCIDRs ("" when it does not): such a
// demand is refused whole rather than served in part, since a count that
// large was not written by a node's agent, and serving it would hand
// one node the free part of the pool.
func demandTooLarge(f tables.Family, mask int, need, have uint64, count int) string {
	if have >= need {
		return ""
	}
	zero := netip.IPv4Unspecified()
	if f == tables.IPv6 {
		zero = netip.IPv6Unspecified()
	}
	per := tables.PodCIDRUsable(netip.PrefixFrom(zero, mask), usableLimit)
	if per == 0 {
		return "" // the maskSize check answers
	}
	// need < 2^63 and per <= 2^40: no overflow.
	total := uint64(count) + (need-have+per-1)/per
	if total <= tables.MaxNodePoolCIDRs {
		return ""
	}
	return fmt.Sprintf("%d /%d CIDRs, more than the %d a node may hold of one pool and family", total, mask, tables.MaxNodePoolCIDRs)
}

// nextFree returns the first CIDR of the pool's mask size, in the order of
// the pool's CIDRs, that no node holds any part of.
func (e *Engine) nextFree(p *poolState, f tables.Family) (netip.Prefix, bool) {
	fam := p.row.Family(f)
	for _, parent := range fam.CIDRs {
		if fam.MaskSize < parent.Bits() {
			continue
		}
		c := netip.PrefixFrom(parent.Addr(), fam.MaskSize).Masked()
		for parent.Contains(c.Addr()) {
			over := e.held.overlapping(c)
			for q := range e.quarantine {
				if tables.PrefixesOverlap(q, c) {
					over = append(over, holding{prefix: q})
				}
			}
			if len(over) == 0 {
				return c, true
			}
			// Jump past the largest overlapping holding (or quarantined
			// CIDR).
			end := c
			for _, o := range over {
				if o.prefix.Bits() < end.Bits() || (o.prefix.Bits() == end.Bits() && end.Addr().Less(o.prefix.Addr())) {
					end = o.prefix
				}
			}
			_, last := tables.PrefixRange(end)
			if !last.Next().IsValid() {
				break
			}
			c = netip.PrefixFrom(last.Next(), fam.MaskSize).Masked()
			if c.Addr().Less(last) { // wrapped
				break
			}
		}
	}
	return netip.Prefix{}, false
}
