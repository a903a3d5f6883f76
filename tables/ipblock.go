package tables

import (
	"fmt"
	"net/netip"
)

// PrefixRange returns the first and last address of a prefix.
func PrefixRange(p netip.Prefix) (first, last netip.Addr) {
	p = p.Masked()
	first = p.Addr()
	b := first.AsSlice()
	bits := p.Bits()
	for i := range b {
		// Set every host bit: bits at positions >= prefix length.
		for j := 0; j < 8; j++ {
			if i*8+j >= bits {
				b[i] |= 0x80 >> j
			}
		}
	}
	last, _ = netip.AddrFromSlice(b)
	if first.Is4() {
		last = last.Unmap()
	}
	return first, last
}

// ParseRange parses the two ends of a start/stop block. An empty stop means
// the single address start. It rejects mixed families and start after stop.
func ParseRange(start, stop string) (from, to netip.Addr, err error) {
	from, err = netip.ParseAddr(start)
	if err != nil {
		return from, to, fmt.Errorf("invalid start IP %q: %w", start, err)
	}
	if from.Zone() != "" {
		return from, to, fmt.Errorf("invalid start IP %q: zones are not allowed", start)
	}
	from = from.Unmap()
	if stop == "" {
		return from, from, nil
	}
	to, err = netip.ParseAddr(stop)
	if err != nil {
		return from, to, fmt.Errorf("invalid stop IP %q: %w", stop, err)
	}
	if to.Zone() != "" {
		return from, to, fmt.Errorf("invalid stop IP %q: zones are not allowed", stop)
	}
	to = to.Unmap()
	if from.Is4() != to.Is4() {
		return from, to, fmt.Errorf("start %q and stop %q are of different IP families", start, stop)
	}
	if to.Less(from) {
		return from, to, fmt.Errorf("start %q is after stop %q", start, stop)
	}
	return from, to, nil
}

// ParseCIDR parses a block's CIDR. Host bits are allowed ("2004::1/64" means
// 2004::/64), as the API server's CIDR validation allows them too.
func ParseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return p, fmt.Errorf("invalid CIDR %q: %w", s, err)
	}
	if p.Addr().Zone() != "" {
		return p, fmt.Errorf("invalid CIDR %q: zones are not allowed", s)
	}
	if p.Addr().Is4In6() {
		return p, fmt.Errorf("invalid CIDR %q: IPv4-mapped IPv6 prefixes are not allowed", s)
	}
	return p.Masked(), nil
}
