package iprange

import (
	"errors"
	"math/big"
	"net/netip"

	"github.com/google/btree"
)

var (
	// ErrOutOfRange is returned for an address outside the range.
	ErrOutOfRange = errors.New("address is outside the range")
	// ErrInUse is returned when claiming an address that is already allocated.
	ErrInUse = errors.New("address is already allocated")
	// ErrReserved is returned when claiming a reserved (first or last) address.
	ErrReserved = errors.New("address is reserved")
)

// interval is a run of consecutive allocated addresses, both ends included.
type interval struct{ lo, hi netip.Addr }

func intervalLess(a, b interval) bool { return a.lo.Less(b.lo) }

// Range is the set of allocated addresses of one block [First, Last].
//
// New allocations come from the allocatable window [lo, hi], which is the
// whole block unless the first and last addresses are reserved. Addresses
// outside the window but inside the block can still be held (claimed before
// the reservation was switched on): reserving never revokes an address.
type Range struct {
	first, last netip.Addr // the block
	lo, hi      netip.Addr // the allocatable window
	used        *btree.BTreeG[interval]
	count       uint64
}

// New returns an empty range over [first, last]. With reserveFirstLast the
// two end addresses are not handed out by Allocate, unless the block has at
// most two addresses (an IPv4 /31 or /32, an IPv6 /127 or /128).
func New(first, last netip.Addr, reserveFirstLast bool) *Range {
	r := &Range{
		first: first, last: last, lo: first, hi: last,
		used: btree.NewG(8, intervalLess),
	}
	if reserveFirstLast && Size(first, last).Cmp(big.NewInt(2)) > 0 {
		r.lo, r.hi = first.Next(), last.Prev()
	}
	return r
}

// Contains reports whether a lies in the block (reserved ends included).
func (r *Range) Contains(a netip.Addr) bool {
	return a.BitLen() == r.first.BitLen() && !a.Less(r.first) && !r.last.Less(a)
}

// Allocatable reports whether a lies in the window new allocations come from.
func (r *Range) Allocatable(a netip.Addr) bool {
	return a.BitLen() == r.lo.BitLen() && !a.Less(r.lo) && !r.hi.Less(a)
}

// containing returns the allocated interval holding a, if any.
func (r *Range) containing(a netip.Addr) (interval, bool) {
	var found interval
	ok := false
	r.used.DescendLessOrEqual(interval{lo: a}, func(iv interval) bool {
		if !iv.hi.Less(a) {
			found, ok = iv, true
		}
		return false
	})
	return found, ok
}

// InUse reports whether a is allocated.
func (r *Range) InUse(a netip.Addr) bool {
	_, ok := r.containing(a)
	return ok
}

// Next returns the lowest free allocatable address without allocating it.
func (r *Range) Next() (netip.Addr, bool) {
	cand := r.lo
	if iv, ok := r.containing(cand); ok {
		// Intervals are merged when adjacent, so the address right after the
		// interval is free (or past the end of the address space).
		cand = iv.hi.Next()
		if !cand.IsValid() {
			return netip.Addr{}, false
		}
	}
	if r.hi.Less(cand) {
		return netip.Addr{}, false
	}
	return cand, true
}

// Allocate takes the lowest free allocatable address.
func (r *Range) Allocate() (netip.Addr, bool) {
	a, ok := r.Next()
	if ok {
		r.insert(a)
	}
	return a, ok
}

// Claim allocates the given address. Reserved ends can only be claimed with
// allowReserved, which restores an allocation that predates the reservation.
func (r *Range) Claim(a netip.Addr, allowReserved bool) error {
	switch {
	case !r.Contains(a):
		return ErrOutOfRange
	case !allowReserved && !r.Allocatable(a):
		return ErrReserved
	case r.InUse(a):
		return ErrInUse
	}
	r.insert(a)
	return nil
}

// insert adds a free address, merging it with its neighbours.
func (r *Range) insert(a netip.Addr) {
	iv := interval{lo: a, hi: a}
	if p := a.Prev(); p.IsValid() {
		if prev, ok := r.containing(p); ok {
			r.used.Delete(prev)
			iv.lo = prev.lo
		}
	}
	if next := a.Next(); next.IsValid() {
		if nx, ok := r.used.Get(interval{lo: next}); ok {
			r.used.Delete(nx)
			iv.hi = nx.hi
		}
	}
	r.used.ReplaceOrInsert(iv)
	r.count++
}

// Release frees an allocated address. It reports whether a was allocated.
func (r *Range) Release(a netip.Addr) bool {
	iv, ok := r.containing(a)
	if !ok {
		return false
	}
	r.used.Delete(iv)
	if iv.lo.Less(a) {
		r.used.ReplaceOrInsert(interval{lo: iv.lo, hi: a.Prev()})
	}
	if a.Less(iv.hi) {
		r.used.ReplaceOrInsert(interval{lo: a.Next(), hi: iv.hi})
	}
	r.count--
	return true
}

// Used is the number of allocated addresses, reserved ends included.
func (r *Range) Used() uint64 { return r.count }

// Total is the number of addresses new allocations can come from.
func (r *Range) Total() *big.Int { return Size(r.lo, r.hi) }

// Available is the number of free allocatable addresses.
func (r *Range) Available() *big.Int {
	inWindow := r.count
	if r.lo != r.first && r.InUse(r.first) {
		inWindow--
	}
	if r.hi != r.last && r.InUse(r.last) {
		inWindow--
	}
	return new(big.Int).Sub(r.Total(), new(big.Int).SetUint64(inWindow))
}

// All calls fn for every allocated address in ascending order until fn
// returns false. It enumerates allocations, never the block.
func (r *Range) All(fn func(netip.Addr) bool) {
	r.used.Ascend(func(iv interval) bool {
		for a := iv.lo; ; a = a.Next() {
			if !fn(a) {
				return false
			}
			if a == iv.hi {
				return true
			}
		}
	})
}
