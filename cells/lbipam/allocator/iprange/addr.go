package iprange

import (
	"math/big"
	"net/netip"
)

// Size returns the number of addresses in [from, to] (0 when to < from).
// The count can exceed 64 bits (an IPv6 /64 holds 2^64 addresses), hence big.Int.
func Size(from, to netip.Addr) *big.Int {
	if !from.IsValid() || !to.IsValid() || from.BitLen() != to.BitLen() || to.Less(from) {
		return new(big.Int)
	}
	n := new(big.Int).Sub(toInt(to), toInt(from))
	return n.Add(n, big.NewInt(1))
}

func toInt(a netip.Addr) *big.Int {
	b := a.AsSlice()
	return new(big.Int).SetBytes(b)
}
