package desired

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	"github.com/heraldlb/herald/tables"
)

// resolveLinkLocal completes a peer reached over an interface at an IPv6
// link-local address: peerInterface with a link-local peerAddress, or BGP
// unnumbered, where the address is the interface's one link-local router
// (the peer's Router Advertisements made it known; failing a router, its
// one link-local neighbour) and the interface is named or is the one a
// default route leaves by. The session is bound to
// the interface: Address carries its index as zone, and LocalAddress is the
// interface's own link-local address, which is also the next hop of the
// routes sent (IPv4 ones too: RFC 8950 extended next hop). It returns
// why the peer cannot run, "" when it can. Interface and Unnumbered are
// set as far as they are known even then: the node advertises itself as
// a router on an unnumbered peer's interface before it knows the peer,
// since that is how the peer finds the node.
func resolveLinkLocal(in inputs, ps tables.BGPPeerSpec, peer *tables.BGPPeer) string {
	peer.Unnumbered = ps.Unnumbered
	peer.Address, peer.LocalAddress = netip.Addr{}, netip.Addr{}
	name := ps.Interface
	if ps.Unnumbered && name == "" {
		gw := in.gateways[ps.UnnumberedFamily]
		if gw == nil || gw.Device == "" {
			return fmt.Sprintf("autoDiscovery: the node has no %s default route whose interface the unnumbered peer is on", ps.UnnumberedFamily)
		}
		name = gw.Device
	}
	peer.Interface = name
	i := slices.IndexFunc(in.devices, func(d *tables.Device) bool { return d.Name == name })
	if i < 0 {
		return fmt.Sprintf("interface %s not found on the node", name)
	}
	for _, a := range in.devices[i].Addresses {
		if a.Addr.Is6() && a.Addr.IsLinkLocalUnicast() {
			peer.LocalAddress = a.Addr.WithZone("")
			break
		}
	}
	if !peer.LocalAddress.IsValid() {
		return fmt.Sprintf("interface %s has no IPv6 link-local address (is IPv6 on for it?)", name)
	}
	// The zone is the interface's index, not its name: Go maps a zone
	// name to an index once a minute, so a name would keep dialling an
	// interface that was deleted and created again for up to a minute.
	// A new index is a new address, and the peer is configured anew.
	zone := strconv.Itoa(in.devices[i].Index)
	if !ps.Unnumbered {
		peer.Address = ps.Address.WithZone(zone)
		return ""
	}
	// The peer of an unnumbered session is a router and says so in its
	// Router Advertisements: the routers of the link first, every
	// neighbour if none is (a peer that sends none, known from its
	// traffic).
	var routers, all []netip.Addr
	for _, n := range in.linkNeighbors {
		// The node's own address is no peer, should its own advertisement
		// ever come back to it.
		own := slices.ContainsFunc(in.devices[i].Addresses, func(a tables.DeviceAddress) bool { return a.Addr.WithZone("") == n.Address })
		if n.Device != name || own {
			continue
		}
		all = append(all, n.Address)
		if n.Router {
			routers = append(routers, n.Address)
		}
	}
	found, what := all, "neighbours"
	if len(routers) > 0 {
		found, what = routers, "routers"
	}
	switch len(found) {
	case 0:
		return fmt.Sprintf("autoDiscovery: no IPv6 link-local neighbour seen on interface %s yet (the peer's Router Advertisements make it known)", name)
	case 1:
		peer.Address = found[0].WithZone(zone)
		return ""
	default:
		return fmt.Sprintf("autoDiscovery: %d IPv6 link-local %s on interface %s %v; BGP unnumbered needs a point-to-point link with one", len(found), what, name, found)
	}
}
