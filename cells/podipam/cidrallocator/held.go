package cidrallocator

import (
	"cmp"
	"net/netip"
	"slices"

	"github.com/heraldlb/herald/tables"
)

// holding is one CIDR a node holds (or is about to get) from a pool.
type holding struct {
	prefix     netip.Prefix
	node, pool string
}

// heldIndex knows every CIDR any node holds, whatever its pool, so that a
// free CIDR is free everywhere: two pools that overlap, a CIDR removed from
// its pool and re-added, a CIDR listed under a pool that no longer exists
// can never lead to one address range on two nodes.
//
// Prefixes either nest or are disjoint, so a prefix p overlaps another
// exactly when one contains the other: the ones p contains lie in the
// sorted list between p's first and last address; the ones containing p are
// p's own shorter prefixes, found by exact lookup.
type heldIndex struct {
	exact  map[netip.Prefix][]holding
	sorted []holding // by address, then prefix length
	// lengths counts the holdings of each prefix length (IPv6 lengths at
	// 33 and up, shifted by 33): overlapping looks up only the shorter
	// prefixes of lengths someone holds, usually one, not all 128.
	lengths [33 + 129]int
}

func newHeldIndex() *heldIndex { return &heldIndex{exact: map[netip.Prefix][]holding{}} }

func compareHoldings(a, b holding) int {
	if c := a.prefix.Addr().Compare(b.prefix.Addr()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.prefix.Bits(), b.prefix.Bits()); c != 0 {
		return c
	}
	if c := cmp.Compare(a.node, b.node); c != 0 {
		return c
	}
	return cmp.Compare(a.pool, b.pool)
}

func lengthSlot(p netip.Prefix) int {
	if p.Addr().Is4() {
		return p.Bits()
	}
	return 33 + p.Bits()
}

func (h *heldIndex) add(x holding) {
	h.lengths[lengthSlot(x.prefix)]++
	h.exact[x.prefix] = append(h.exact[x.prefix], x)
	i, _ := slices.BinarySearchFunc(h.sorted, x, compareHoldings)
	h.sorted = slices.Insert(h.sorted, i, x)
}

func (h *heldIndex) remove(x holding) {
	before := len(h.exact[x.prefix])
	h.exact[x.prefix] = slices.DeleteFunc(h.exact[x.prefix], func(y holding) bool { return y == x })
	h.lengths[lengthSlot(x.prefix)] -= before - len(h.exact[x.prefix])
	if len(h.exact[x.prefix]) == 0 {
		delete(h.exact, x.prefix)
	}
	if i, ok := slices.BinarySearchFunc(h.sorted, x, compareHoldings); ok {
		h.sorted = slices.Delete(h.sorted, i, i+1)
	}
}

// overlapping returns every holding that shares an address with p.
func (h *heldIndex) overlapping(p netip.Prefix) []holding {
	var out []holding
	base := lengthSlot(p) - p.Bits()
	for bits := 0; bits < p.Bits(); bits++ {
		if h.lengths[base+bits] == 0 {
			continue
		}
		outer, _ := p.Addr().Prefix(bits)
		out = append(out, h.exact[outer]...)
	}
	first, last := tables.PrefixRange(p)
	i, _ := slices.BinarySearchFunc(h.sorted, holding{prefix: netip.PrefixFrom(first, 0)}, compareHoldings)
	for ; i < len(h.sorted) && !last.Less(h.sorted[i].prefix.Addr()); i++ {
		// Shorter prefixes starting at first contain p: found above.
		if h.sorted[i].prefix.Addr().BitLen() == first.BitLen() && h.sorted[i].prefix.Bits() >= p.Bits() {
			out = append(out, h.sorted[i])
		}
	}
	return out
}
