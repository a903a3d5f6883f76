package tables

import (
	"fmt"
	"math/big"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
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

// PodCIDRMaskSizeProblem says why node CIDRs of a pool's maskSize can hold
// no pod at all ("" when they can, or when mask is out of the family's
// range, which the spec check reports): IPv4 /31 and /32, IPv6 /127 and
// /128. Cilium's CRD accepts these, and so does Herald's, so that a
// manifest valid for Cilium still applies; the allocator then hands out
// nothing of that family of the pool, rather than CIDRs that add nothing.
// The text names the maskSize and the reason, for the pool's condition
// and the node's operator-status; it holds no "; " (both are joined with
// it).
func PodCIDRMaskSizeProblem(f Family, mask int) string {
	bits, reserved, longest := 32, "the network address, the gateway (the node's address on the pods' bridge) and the broadcast address", 30
	if f == IPv6 {
		bits, reserved, longest = 128, "the first address (subnet-router anycast) and the gateway (the node's address on the pods' bridge)", 126
	}
	if mask < 1 || mask > bits {
		return ""
	}
	if PodCIDRUsable(netip.PrefixFrom(zeroAddr(f), mask), 1) > 0 {
		return ""
	}
	size := "1 address"
	if mask < bits {
		size = "2 addresses"
	}
	return fmt.Sprintf("/%d leaves no address for pods: a node CIDR of that size has %s, and Herald reserves %s of each. /%d is the longest %s maskSize Herald serves",
		mask, size, reserved, longest, f)
}

func zeroAddr(f Family) netip.Addr {
	if f == IPv6 {
		return netip.IPv6Unspecified()
	}
	return netip.IPv4Unspecified()
}

// PrefixCount is the number of prefixes of length bits inside p, as a
// decimal string (IPv6 counts exceed 64 bits).
func PrefixCount(p netip.Prefix, bits int) string {
	if bits < p.Bits() {
		return "0"
	}
	return new(big.Int).Lsh(big.NewInt(1), uint(bits-p.Bits())).String()
}

// PrefixesOverlap reports whether two prefixes share an address.
func PrefixesOverlap(a, b netip.Prefix) bool {
	return a.Addr().BitLen() == b.Addr().BitLen() && a.Overlaps(b)
}

// ShortfallCause says why the pod CIDR allocator could not give a node the
// addresses it asks of a pool.
type ShortfallCause string

const (
	ShortfallExhausted ShortfallCause = "exhausted" // no free CIDR is left in the pool
	ShortfallConflict  ShortfallCause = "conflict"  // the pool overlaps an older one
	ShortfallDeleting  ShortfallCause = "deleting"  // the pool is being deleted
	ShortfallMaskSize  ShortfallCause = "maskSize"  // its node CIDRs hold no pod (PodCIDRMaskSizeProblem)
	ShortfallTooLarge  ShortfallCause = "tooLarge"  // the demand takes more CIDRs than a node may hold (MaxNodePoolCIDRs)
)

// MaxNodePoolCIDRs is how many CIDRs of one pool and family the allocator
// lets a node hold. A node's agent never comes near it (a bridge holds 1024
// ports; with the longest IPv4 maskSize served, /30, it is 1024 pods); a
// requested count edited by hand, or written by a broken tool, would
// otherwise hand one node a whole pool, make its CiliumNode too large to
// store, or, in an IPv6 pool of 2^80 CIDRs, never end.
const MaxNodePoolCIDRs = 1024

// PodCIDRShortfall is one pool and family the allocator could not fill for
// a node. The allocator writes it into the CiliumNode's
// status.ipam.operator-status.error as text (String, Cilium's field), and
// the node's agent reads it back (ParsePodCIDRShortfalls) to answer a
// waiting ADD at once with the reason.
type PodCIDRShortfall struct {
	Pool   string         `json:"pool"`
	Family Family         `json:"family"`
	Cause  ShortfallCause `json:"cause"`
	// Detail is the human reason, e.g. "no free /24 is left in its IPv4 CIDRs".
	Detail string `json:"detail"`
	// Requested is the node's demand the allocator looked at; Available
	// what the node's CIDRs of the pool hold.
	Requested uint64 `json:"requested"`
	Available uint64 `json:"available"`
}

func (s PodCIDRShortfall) String() string {
	return fmt.Sprintf("unable to allocate %s CIDRs from pool %q: %s (%d addresses requested, %d available)",
		s.Family, s.Pool, s.Detail, s.Requested, s.Available)
}

// Details of the shortfalls other than exhaustion: their text tells the
// cause when the error is read back.
const (
	shortfallDeletingDetail = "the pool is being deleted"
	shortfallConflictDetail = "the pool conflicts with another one"
	shortfallMaskSizeDetail = "its maskSize "
	shortfallTooLargeDetail = "the demand takes "
)

// NewPodCIDRShortfall builds a shortfall. detail is, for exhaustion, the
// whole reason; for a conflict, the conflict's message; for a maskSize,
// PodCIDRMaskSizeProblem's; for a demand too large, how many CIDRs it
// takes; a deletion needs none.
func NewPodCIDRShortfall(pool string, f Family, cause ShortfallCause, detail string, requested, available uint64) PodCIDRShortfall {
	s := PodCIDRShortfall{Pool: pool, Family: f, Cause: cause, Detail: detail, Requested: requested, Available: available}
	switch cause {
	case ShortfallDeleting:
		s.Detail = shortfallDeletingDetail
	case ShortfallConflict:
		s.Detail = shortfallConflictDetail + " (" + detail + ")"
	case ShortfallMaskSize:
		s.Detail = shortfallMaskSizeDetail + detail
	case ShortfallTooLarge:
		s.Detail = shortfallTooLargeDetail + detail
	}
	return s
}

var shortfallRE = regexp.MustCompile(`^unable to allocate (IPv4|IPv6) CIDRs from pool "([^"]+)": (.*) \((\d+) addresses requested, (\d+) available\)$`)

// ParsePodCIDRShortfalls reads the shortfalls back from an operator-status
// error (the allocator joins its messages with "; "). Other messages, and
// text written by hand, are skipped.
func ParsePodCIDRShortfalls(operatorError string) []PodCIDRShortfall {
	var out []PodCIDRShortfall
	for _, msg := range strings.Split(operatorError, "; ") {
		m := shortfallRE.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		req, err1 := strconv.ParseUint(m[4], 10, 64)
		avail, err2 := strconv.ParseUint(m[5], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		s := PodCIDRShortfall{Pool: m[2], Family: IPv4, Cause: ShortfallExhausted, Detail: m[3], Requested: req, Available: avail}
		if m[1] == "IPv6" {
			s.Family = IPv6
		}
		switch {
		case m[3] == shortfallDeletingDetail:
			s.Cause = ShortfallDeleting
		case strings.HasPrefix(m[3], shortfallConflictDetail):
			s.Cause = ShortfallConflict
		case strings.HasPrefix(m[3], shortfallMaskSizeDetail):
			s.Cause = ShortfallMaskSize
		case strings.HasPrefix(m[3], shortfallTooLargeDetail):
			s.Cause = ShortfallTooLarge
		}
		out = append(out, s)
	}
	return out
}
