package allocator

import "net/netip"

// Which pool counts an address as used. An address in use is claimed in
// every block that contains it (markEverywhere): that is what keeps
// overlapping pools from handing it out twice, and it makes the address
// unavailable in each of them. But only the pool that backs the address
// for its Services (tables.AllocatedIP.Pool: the oldest pool that contains
// it and serves the Service) counts it as used, as Cilium counts in each
// range only what that range handed out. So with blue-pool and red-pool
// both 20.0.10.0/24 and one Service served by blue-pool, blue-pool shows
// Used 1 and red-pool Used 0, and neither offers the address.

// backers is how many holders of the address took it from the pool.
func (e *Engine) backers(a netip.Addr, pool string) int {
	use := e.ips[a]
	if use == nil {
		return 0
	}
	n := 0
	for _, u := range use.users {
		for _, h := range u.held {
			if h.Addr == a && h.Pool == pool {
				n++
			}
		}
	}
	return n
}

// countBacked adjusts the pool's count of the addresses it backs, after a
// holder took the address from it (delta 1, counted if it is the first) or
// gave it back (delta -1, counted if it was the last).
func (e *Engine) countBacked(a netip.Addr, pool string, delta int) {
	p := e.pools[pool]
	if p == nil {
		return // a deleted pool: its holders are evaluated, and move or release
	}
	switch n := e.backers(a, pool); {
	case delta > 0 && n == 1:
		p.used++
	case delta < 0 && n == 0:
		p.used--
	default:
		return
	}
	e.dirtyPools[pool] = struct{}{}
}

// recountBacked counts the addresses a new or edited pool backs: Services
// may hold addresses under its name from before the edit (or from a pool
// of that name deleted meanwhile).
func (e *Engine) recountBacked(p *poolState) {
	p.used = 0
	for a := range e.ips {
		if e.backers(a, p.row.Name) > 0 {
			p.used++
		}
	}
}
