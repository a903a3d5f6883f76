package nodeipam

import (
	"net/netip"
	"slices"
	"sort"
	"time"

	"github.com/heraldlb/herald/tables"
)

// What the node asks of the pod CIDR allocator: its usage and capacity
// per pool, the CIDRs it needs more of, and those it can give back.

// usage counts addresses in use and pending ADDs per pool and family.
func (s *state) usage() (inUse, pending map[poolFamily]int) {
	inUse, pending = map[poolFamily]int{}, map[poolFamily]int{}
	for _, e := range s.allocs {
		inUse[poolFamily{e.Pool, tables.FamilyOf(e.IP)}]++
	}
	for _, e := range s.orphans {
		inUse[poolFamily{e.Pool, tables.FamilyOf(e.IP)}]++
	}
	now := s.now()
	for pf, waiting := range s.pending {
		for a, until := range waiting {
			if now.After(until) {
				delete(waiting, a)
				continue
			}
			pending[pf]++
		}
	}
	return inUse, pending
}

// capacity counts, per pool and family, the usable addresses of the CIDRs
// that still hand out (not gone, not being released) and the CIDRs held.
func (s *state) capacity() (usable map[poolFamily]uint64, cidrs map[poolFamily]int) {
	usable, cidrs = map[poolFamily]uint64{}, map[poolFamily]int{}
	for p, c := range s.cidrs {
		pf := poolFamily{c.pool, tables.FamilyOf(p.Addr())}
		cidrs[pf]++
		if c.servesNew() {
			usable[pf] += c.addrs.usable()
		}
	}
	return usable, cidrs
}

// waiting reports whether an ADD waits for a CIDR right now.
func (s *state) waiting() bool {
	_, pending := s.usage()
	for _, n := range pending {
		if n > 0 {
			return true
		}
	}
	return false
}

// demand computes spec.ipam.pools.requested: for every pool in use,
// waited for, or with a pre-allocation, the spec's formula per family the
// agent runs (needsOf); pools that can give nothing are left out.
func (s *state) demand() []tables.PoolDemand {
	inUse, pending := s.usage()
	names := map[string]bool{}
	for pf, n := range inUse {
		if n > 0 {
			names[pf.pool] = true
		}
	}
	for pf, n := range pending {
		if n > 0 {
			names[pf.pool] = true
		}
	}
	for name, n := range s.pre {
		if n > 0 && s.pools[name] != nil {
			names[name] = true
		}
	}
	var out []tables.PoolDemand
	for _, name := range sortedSet(names) {
		d := tables.PoolDemand{Pool: name}
		for _, f := range s.families {
			pf := poolFamily{name, f}
			n := s.needsOf(pf, inUse[pf], pending[pf])
			if f == tables.IPv4 {
				d.IPv4 = n
			} else {
				d.IPv6 = n
			}
		}
		if d.IPv4 > 0 || d.IPv6 > 0 {
			out = append(out, d)
		}
	}
	return out
}

// needs is how many addresses of one pool and family the node asks for.
func (s *state) needs(pf poolFamily) int {
	inUse, pending := s.usage()
	return s.needsOf(pf, inUse[pf], pending[pf])
}

// needsOf applies the spec's formula (needed), and asks nothing of a pool
// that can give nothing: one that is gone, being deleted, or has no CIDRs
// of the family. Its pre-allocation would otherwise keep a deleted pool
// alive (the node holding a CIDR of it), or report an error for good (an
// IPv4-only pool pre-allocated on a dual-stack node). Its pods keep their
// addresses, and an ADD for it is refused before it waits.
func (s *state) needsOf(pf poolFamily, inUse, pending int) int {
	p := s.pools[pf.pool]
	if p == nil || p.Deleting || p.Family(pf.fam) == nil {
		return 0
	}
	return needed(inUse, pending, s.pre[pf.pool])
}

// releasable returns the CIDRs the node can give back: draining and
// empty, or empty for at least settle and not needed to cover the demand
// of their pool and family with the CIDRs that stay. It marks them releasing: nothing is allocated
// from them any more (unmark with keep if the release fails).
func (s *state) releasable(demand []tables.PoolDemand, settle time.Duration) []tables.PoolCIDRs {
	want := map[poolFamily]int{}
	for _, d := range demand {
		for _, f := range s.families {
			want[poolFamily{d.Pool, f}] = d.Of(f)
		}
	}
	now := s.now()
	var out []tables.PoolCIDRs
	for pf, ps := range s.order {
		capacity := uint64(0)
		for _, p := range ps {
			if c := s.cidrs[p]; c != nil && c.servesNew() {
				capacity += c.addrs.usable()
			}
		}
		// Release the last listed first: the first CIDRs stay the node's.
		for i := len(ps) - 1; i >= 0; i-- {
			c := s.cidrs[ps[i]]
			if c == nil || c.gone || c.releasing || c.addrs.inUse() > 0 {
				continue
			}
			if c.draining {
				// Its pool no longer has it: nothing can come from it
				// again, so it goes at once.
				c.releasing = true
				out = addPoolCIDR(out, pf.pool, ps[i])
				continue
			}
			if c.emptySince.IsZero() || now.Sub(c.emptySince) < settle {
				continue
			}
			// A CIDR that holds no usable address (its pool's maskSize
			// leaves none; the allocator no longer hands such CIDRs out)
			// covers nothing: it goes once it settled.
			if u := c.addrs.usable(); u > 0 && capacity-u < uint64(want[pf]) {
				continue
			}
			capacity -= c.addrs.usable()
			c.releasing = true
			out = addPoolCIDR(out, pf.pool, ps[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	return out
}

// inUseCIDRs are the CIDRs holding an address the journal knows, adopted
// or orphaned, by pool: what the node must keep whatever its CiliumNode
// says.
func (s *state) inUseCIDRs() []tables.PoolCIDRs {
	seen := map[netip.Prefix]bool{}
	var out []tables.PoolCIDRs
	for e := range s.all() {
		if !seen[e.CIDR] {
			seen[e.CIDR] = true
			out = addPoolCIDR(out, e.Pool, e.CIDR)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pool < out[j].Pool })
	for _, a := range out {
		slices.SortFunc(a.CIDRs, func(x, y netip.Prefix) int { return x.Addr().Compare(y.Addr()) })
	}
	return out
}

// keep takes back CIDRs marked releasing whose release did not go through.
func (s *state) keep(cs []tables.PoolCIDRs) {
	for _, a := range cs {
		for _, p := range a.CIDRs {
			if c := s.cidrs[p]; c != nil {
				c.releasing = false
			}
		}
	}
}

func addPoolCIDR(out []tables.PoolCIDRs, pool string, p netip.Prefix) []tables.PoolCIDRs {
	for i := range out {
		if out[i].Pool == pool {
			out[i].CIDRs = append(out[i].CIDRs, p)
			return out
		}
	}
	return append(out, tables.PoolCIDRs{Pool: pool, CIDRs: []netip.Prefix{p}})
}

func sortedSet(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// needed is how many addresses of a pool the node asks for: the spec's
// neededIPs = roundUp(inUse + pending + pre, pre). A pool without a
// pre-allocation entry asks for exactly inUse + pending.
func needed(inUse, pending, pre int) int {
	n := inUse + pending
	if pre <= 0 {
		return n
	}
	n += pre
	return (n + pre - 1) / pre * pre
}

// nextSettle is how long until the next empty CIDR has stayed empty for
// settle (releasable may give it back then); 0: none is waiting.
func (s *state) nextSettle(settle time.Duration) time.Duration {
	now := s.now()
	var next time.Duration
	for _, c := range s.cidrs {
		if c.gone || c.releasing || c.draining || c.addrs.inUse() > 0 || c.emptySince.IsZero() {
			continue
		}
		if d := c.emptySince.Add(settle).Sub(now); d > 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}
