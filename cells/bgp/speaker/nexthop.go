package speaker

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// IPv6 routes over an IPv4 session (multiprotocol BGP). GoBGP gives a
// locally originated path the session's local address as next hop; on an
// IPv4 session that is an IPv4 address, which an IPv6 route can only
// carry IPv4-mapped (::ffff:198.18.0.11). Routers accept such a route and
// cannot forward through it (it is the 6PE encoding, for MPLS cores), so
// Herald names the next hop itself: a global IPv6 address of the node on
// the interface the session leaves by, as a router on that link reaches
// it. A node without one does not send the peer its IPv6 routes at all,
// and says so (bgp-peers, the CiliumBGPNodeConfig condition, a log
// line), rather than send routes nobody can use.

// nextHop6 is the IPv6 next hop of one peer's IPv6 routes; only peers
// that need one (needsIPv6NextHop) have one.
type nextHop6 struct {
	addr netip.Addr // invalid: none found, problem says why
	// problem says why the peer's IPv6 routes are not advertised.
	problem string
}

// needsIPv6NextHop: an IPv4 peer with the ipv6-unicast family. (An IPv6
// session's own local address is the right next hop.)
func needsIPv6NextHop(p tables.BGPPeer) bool {
	return p.Address.Is4() && slices.Contains(p.Families, v2alpha1.BGPAfiIPv6+"-"+v2alpha1.BGPSafiUnicast)
}

// chooseIPv6NextHop picks the next hop of a peer's IPv6 routes from the
// device its session leaves by (dev; nil with lookupErr saying why it is
// not known): the first global unicast IPv6 address on it, the device's
// addresses being sorted, so that every round picks the same one.
func chooseIPv6NextHop(peer tables.BGPPeer, dev *tables.Device, lookupErr error) nextHop6 {
	if dev == nil {
		return nextHop6{problem: fmt.Sprintf("no IPv6 next hop for its ipv6-unicast routes: the interface toward %s is not known: %v", peer.Address, lookupErr)}
	}
	for _, a := range dev.Addresses {
		if usableIPv6NextHop(a) {
			return nextHop6{addr: a.Addr}
		}
	}
	return nextHop6{problem: fmt.Sprintf("no IPv6 next hop for its ipv6-unicast routes: %s, the interface toward %s, has no global IPv6 address "+
		"(the session's IPv4 address would go out IPv4-mapped, which routers cannot forward to); add one, or peer over IPv6", dev.Name, peer.Address)}
}

func usableIPv6NextHop(a tables.DeviceAddress) bool {
	return a.Addr.Is6() && !a.Addr.Is4In6() && a.Scope == tables.ScopeUniverse &&
		a.Addr.IsGlobalUnicast() && !a.Addr.IsLinkLocalUnicast()
}

// deviceWithAddr is the device that holds addr (a peer's configured local
// address: the session leaves by that device).
func deviceWithAddr(devs []*tables.Device, addr netip.Addr) *tables.Device {
	for _, d := range devs {
		for _, a := range d.Addresses {
			if a.Addr == addr {
				return d
			}
		}
	}
	return nil
}

// nextHopChanges lists, for the log, the peers whose next hop (or its
// problem) differs between two rounds.
func nextHopChanges(old, cur map[string]nextHop6) []string {
	var out []string
	for name, n := range cur {
		if o, ok := old[name]; !ok || o != n {
			out = append(out, name)
		}
	}
	for name := range old {
		if _, ok := cur[name]; !ok {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// nextHopOf is the next hop a route's export needs: invalid when the
// peer needs none (ok) or when none was found (!ok: not exported).
func nextHopOf(hops map[string]nextHop6, peer string, p netip.Prefix) (netip.Addr, bool) {
	if !p.Addr().Is6() {
		return netip.Addr{}, true
	}
	h, needed := hops[peer]
	if !needed {
		return netip.Addr{}, true
	}
	return h.addr, h.addr.IsValid()
}
