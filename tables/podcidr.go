package tables

import (
	"fmt"
	"math/big"
	"net/netip"
)

// Annotations that choose a pod's pool (the spec's multi-pool section): on
// the Pod first, then on its Namespace; the per-family ones beat ip-pool.
const (
	AnnotationIPPool   = "ipam.cilium.io/ip-pool"
	AnnotationIPv4Pool = "ipam.cilium.io/ipv4-pool"
	AnnotationIPv6Pool = "ipam.cilium.io/ipv6-pool"
	// DefaultPodIPPool serves pods that name no pool.
	DefaultPodIPPool = "default"
)

// Family is an IP family: 4 or 6.
type Family int

const (
	IPv4 Family = 4
	IPv6 Family = 6
)

func (f Family) String() string { return fmt.Sprintf("IPv%d", int(f)) }

// FamilyOf returns the family of an address.
func FamilyOf(a netip.Addr) Family {
	if a.Is4() {
		return IPv4
	}
	return IPv6
}

// A node's pod CIDR gives pods every address but the reserved ones: the
// first (the network address, or IPv6's subnet-router anycast), the second
// (the gateway, which the main CNI plugin puts on the node's bridge) and,
// for IPv4, the last (broadcast). The allocator and the agents must agree
// on this: the allocator hands out CIDRs until their usable addresses cover
// what a node asks for.

// PodCIDRGateway returns the gateway address of a node's pod CIDR.
func PodCIDRGateway(p netip.Prefix) netip.Addr { return p.Masked().Addr().Next() }

// PodCIDRReserved reports whether a is one of p's reserved addresses.
func PodCIDRReserved(p netip.Prefix, a netip.Addr) bool {
	first, last := PrefixRange(p)
	return a == first || a == first.Next() || (a.Is4() && a == last)
}

// PodCIDRUsable is the number of addresses pods can get from p, capped at
// limit (IPv6 CIDRs can hold more than any count fits in).
func PodCIDRUsable(p netip.Prefix, limit uint64) uint64 {
	host := p.Addr().BitLen() - p.Bits()
	reserved := uint64(2)
	if p.Addr().Is4() {
		reserved = 3
	}
	if host >= 63 {
		return limit
	}
	size := uint64(1) << host
	if size <= reserved {
		return 0
	}
	if u := size - reserved; u < limit {
		return u
	}
	return limit
}

// PrefixCount is the number of prefixes of length bits inside p, as a
// decimal string (IPv6 counts exceed 64 bits).
func PrefixCount(p netip.Prefix, bits int) string {
	if bits < p.Bits() {
		return "0"
	}
	return new(big.Int).Lsh(big.NewInt(1), uint(bits-p.Bits())).String()
}

// NextPrefix returns the prefix of the same length right after p, and false
// when p is the last one of its family.
func NextPrefix(p netip.Prefix) (netip.Prefix, bool) {
	_, last := PrefixRange(p)
	next := last.Next()
	if !next.IsValid() {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(next, p.Bits()), true
}

// PrefixesOverlap reports whether two prefixes share an address.
func PrefixesOverlap(a, b netip.Prefix) bool {
	return a.Addr().BitLen() == b.Addr().BitLen() && a.Overlaps(b)
}
