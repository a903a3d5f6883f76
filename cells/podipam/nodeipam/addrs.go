package nodeipam

import (
	"net/netip"

	"github.com/heraldlb/herald/tables"
)

// cidrAddrs hands out the addresses of one of the node's pod CIDRs. It
// goes round the CIDR instead of reusing the lowest free address, like
// host-local: a pod that just went keeps its address out of circulation
// for as long as possible (stale conntrack entries, caches, peers that have
// not noticed).
type cidrAddrs struct {
	prefix netip.Prefix
	used   map[netip.Addr]struct{}
	next   netip.Addr // where the next search starts
}

func newCIDRAddrs(p netip.Prefix) *cidrAddrs {
	p = p.Masked()
	return &cidrAddrs{prefix: p, used: map[netip.Addr]struct{}{}, next: p.Addr()}
}

// allocate returns a free address, or false when none is left.
func (c *cidrAddrs) allocate() (netip.Addr, bool) {
	if uint64(len(c.used)) >= tables.PodCIDRUsable(c.prefix, 1<<62) {
		return netip.Addr{}, false
	}
	a := c.next
	for {
		if !c.prefix.Contains(a) {
			a = c.prefix.Addr() // wrap around
		}
		if _, taken := c.used[a]; !taken && !tables.PodCIDRReserved(c.prefix, a) {
			c.used[a] = struct{}{}
			c.next = a.Next()
			return a, true
		}
		a = a.Next()
	}
}

// claim marks an address used (restored from the journal); false if it is
// not one this CIDR may hand out or already used.
func (c *cidrAddrs) claim(a netip.Addr) bool {
	if !c.prefix.Contains(a) || tables.PodCIDRReserved(c.prefix, a) {
		return false
	}
	if _, taken := c.used[a]; taken {
		return false
	}
	c.used[a] = struct{}{}
	return true
}

func (c *cidrAddrs) release(a netip.Addr) { delete(c.used, a) }

func (c *cidrAddrs) inUse() int { return len(c.used) }

func (c *cidrAddrs) usable() uint64 { return tables.PodCIDRUsable(c.prefix, 1<<62) }
