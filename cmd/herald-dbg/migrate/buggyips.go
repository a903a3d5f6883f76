package migrate

import (
	"net/netip"
	"strings"
)

// avoidBuggyIPs judges allowFirstLastIPs: No as MetalLB's avoidBuggyIPs.
// MetalLB keeps back every IPv4 address ending in .0 or .255; Herald the
// first and last address of each cidr block of more than two addresses
// (IPv4 and IPv6), and nothing of start/stop blocks. They agree on a block
// when both keep back the same addresses.
func avoidBuggyIPs(source, target string, prefixes []netip.Prefix, ranges [][2]netip.Addr) Finding {
	var differ []string
	for _, p := range prefixes {
		if !sameExclusions(p) {
			differ = append(differ, p.String())
		}
	}
	for _, r := range ranges {
		if r[0].Is4() && hasBuggyIP(r[0], r[1]) {
			differ = append(differ, r[0].String()+"-"+r[1].String())
		}
	}
	f := Finding{Source: source, Field: "spec.avoidBuggyIPs", Target: target + " spec.allowFirstLastIPs: No"}
	if len(differ) == 0 {
		f.Verdict = Exact
		return f
	}
	f.Verdict = Approximate
	f.Reason = "MetalLB avoids every IPv4 address ending in .0 or .255, Herald the first and last address of each cidr block (IPv4 and IPv6, of more than two addresses) and none of a start/stop block; they differ in " + strings.Join(differ, ", ")
	return f
}

// sameExclusions reports whether MetalLB and Herald keep back the same
// addresses of a CIDR.
func sameExclusions(p netip.Prefix) bool {
	last := lastAddr(p)
	small := p.Bits() >= p.Addr().BitLen()-1 // one or two addresses: Herald keeps back nothing
	if !p.Addr().Is4() {
		return small // MetalLB keeps back nothing of IPv6
	}
	if small {
		return !hasBuggyIP(p.Addr(), last)
	}
	return p.Bits() == 24 // exactly .0 and .255, the first and the last
}

// hasBuggyIP reports whether an IPv4 range holds an address ending in .0
// or .255.
func hasBuggyIP(start, stop netip.Addr) bool {
	s, e := start.As4(), stop.As4()
	if s[0] != e[0] || s[1] != e[1] || s[2] != e[2] {
		return true // spans a /24 boundary: x.y.z.255 and x.y.(z+1).0
	}
	return s[3] == 0 || e[3] == 255
}

func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}
