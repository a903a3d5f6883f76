package desired

import (
	"net/netip"
	"testing"

	"github.com/heraldlb/herald/tables"
)

// A peer over an interface (peerInterface, or BGP unnumbered) is reached
// at a link-local address zoned with the interface's index, from the
// interface's own link-local address; an unnumbered one is the interface's one link-local router,
// the interface named or the default route's. Until it can run, it says
// why, and still names its interface (the node advertises itself there).
func TestDeriveLinkLocalPeers(t *testing.T) {
	dev := func(name string, index int, ips ...string) *tables.Device {
		d := &tables.Device{Name: name, Index: index}
		for _, ip := range ips {
			d.Addresses = append(d.Addresses, tables.DeviceAddress{Addr: netip.MustParseAddr(ip)})
		}
		return d
	}
	router := func(dev, ip string) *tables.BGPLinkNeighbor {
		return &tables.BGPLinkNeighbor{Device: dev, Address: netip.MustParseAddr(ip), Router: true}
	}
	host := func(dev, ip string) *tables.BGPLinkNeighbor {
		return &tables.BGPLinkNeighbor{Device: dev, Address: netip.MustParseAddr(ip)}
	}
	devices := []*tables.Device{dev("eth0", 2, "198.18.44.11", "fe80::11"), dev("eth1", 3, "198.18.45.11", "fe80::a"), dev("v4only", 4, "198.18.46.11")}
	gw4 := &tables.BGPDefaultGateway{Family: "ipv4", Gateway: netip.MustParseAddr("198.18.45.1"), Device: "eth1"}
	for _, c := range []struct {
		name                 string
		spec                 tables.BGPPeerSpec
		routers              []*tables.BGPLinkNeighbor
		wantAddr, wantLocal  string
		wantIface, wantErr   string
		wantUnnumberedOnPeer bool
	}{
		{name: "unnumbered on a named interface",
			spec:     tables.BGPPeerSpec{Unnumbered: true, Interface: "eth0"},
			routers:  []*tables.BGPLinkNeighbor{router("eth0", "fe80::1"), router("eth1", "fe80::2")},
			wantAddr: "fe80::1%2", wantLocal: "fe80::11", wantIface: "eth0", wantUnnumberedOnPeer: true},
		{name: "unnumbered: the node's own address is no peer",
			spec:     tables.BGPPeerSpec{Unnumbered: true, Interface: "eth0"},
			routers:  []*tables.BGPLinkNeighbor{router("eth0", "fe80::1"), router("eth0", "fe80::11")},
			wantAddr: "fe80::1%2", wantLocal: "fe80::11", wantIface: "eth0", wantUnnumberedOnPeer: true},
		{name: "unnumbered on the default route's interface",
			spec:     tables.BGPPeerSpec{Unnumbered: true, UnnumberedFamily: "ipv4"},
			routers:  []*tables.BGPLinkNeighbor{router("eth0", "fe80::1"), router("eth1", "fe80::2")},
			wantAddr: "fe80::2%3", wantLocal: "fe80::a", wantIface: "eth1", wantUnnumberedOnPeer: true},
		{name: "unnumbered, no such default route",
			spec:    tables.BGPPeerSpec{Unnumbered: true, UnnumberedFamily: "ipv6"},
			wantErr: "autoDiscovery: the node has no ipv6 default route whose interface the unnumbered peer is on", wantUnnumberedOnPeer: true},
		{name: "unnumbered, the peer not seen yet",
			spec:      tables.BGPPeerSpec{Unnumbered: true, Interface: "eth0"},
			routers:   []*tables.BGPLinkNeighbor{router("eth1", "fe80::2")},
			wantLocal: "fe80::11", wantIface: "eth0", wantUnnumberedOnPeer: true,
			wantErr: "autoDiscovery: no IPv6 link-local neighbour seen on interface eth0 yet (the peer's Router Advertisements make it known)"},
		{name: "unnumbered: a router wins over hosts",
			spec:     tables.BGPPeerSpec{Unnumbered: true, Interface: "eth0"},
			routers:  []*tables.BGPLinkNeighbor{host("eth0", "fe80::5"), router("eth0", "fe80::1"), host("eth0", "fe80::6")},
			wantAddr: "fe80::1%2", wantLocal: "fe80::11", wantIface: "eth0", wantUnnumberedOnPeer: true},
		{name: "unnumbered: no router, one neighbour",
			spec:     tables.BGPPeerSpec{Unnumbered: true, Interface: "eth0"},
			routers:  []*tables.BGPLinkNeighbor{host("eth0", "fe80::5")},
			wantAddr: "fe80::5%2", wantLocal: "fe80::11", wantIface: "eth0", wantUnnumberedOnPeer: true},
		{name: "unnumbered: no router, two neighbours",
			spec:      tables.BGPPeerSpec{Unnumbered: true, Interface: "eth0"},
			routers:   []*tables.BGPLinkNeighbor{host("eth0", "fe80::5"), host("eth0", "fe80::6")},
			wantLocal: "fe80::11", wantIface: "eth0", wantUnnumberedOnPeer: true,
			wantErr: "autoDiscovery: 2 IPv6 link-local neighbours on interface eth0 [fe80::5 fe80::6]; BGP unnumbered needs a point-to-point link with one"},
		{name: "unnumbered, two routers on the link",
			spec:      tables.BGPPeerSpec{Unnumbered: true, Interface: "eth0"},
			routers:   []*tables.BGPLinkNeighbor{router("eth0", "fe80::1"), router("eth0", "fe80::3")},
			wantLocal: "fe80::11", wantIface: "eth0", wantUnnumberedOnPeer: true,
			wantErr: "autoDiscovery: 2 IPv6 link-local routers on interface eth0 [fe80::1 fe80::3]; BGP unnumbered needs a point-to-point link with one"},
		{name: "unnumbered, no such interface",
			spec:      tables.BGPPeerSpec{Unnumbered: true, Interface: "eth9"},
			wantIface: "eth9", wantErr: "interface eth9 not found on the node", wantUnnumberedOnPeer: true},
		{name: "unnumbered, the interface has no link-local address",
			spec:      tables.BGPPeerSpec{Unnumbered: true, Interface: "v4only"},
			wantIface: "v4only", wantErr: "interface v4only has no IPv6 link-local address (is IPv6 on for it?)", wantUnnumberedOnPeer: true},
		{name: "peerInterface with a link-local peerAddress",
			spec:     tables.BGPPeerSpec{Address: netip.MustParseAddr("fe80::99"), Interface: "eth1"},
			wantAddr: "fe80::99%3", wantLocal: "fe80::a", wantIface: "eth1"},
		{name: "peerAddress that does not parse wins",
			spec:    tables.BGPPeerSpec{AddressError: `"fe80::zz" is not an IP address`, Interface: "eth1"},
			wantErr: `peerAddress: "fe80::zz" is not an IP address`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cc := clusterConfig("cc", "pc")
			spec := c.spec
			spec.Name, spec.ASN, spec.PeerConfig = "tor", 65000, "pc"
			cc.Instances[0].Peers = []tables.BGPPeerSpec{spec}
			in := inputs{
				self:           node("node1", nil, "198.18.0.11"),
				clusterConfigs: []*tables.BGPClusterConfig{cc},
				peerConfigs:    map[string]*tables.BGPPeerConfig{"pc": peerConfig("pc", "")},
				gateways:       map[string]*tables.BGPDefaultGateway{"ipv4": gw4},
				devices:        devices,
				linkNeighbors:  c.routers,
				readyHere:      func(string) bool { return false },
				served:         func(string) bool { return true },
			}
			instances, _, _ := derive(in)
			if len(instances) != 1 || len(instances[0].Peers) != 1 {
				t.Fatalf("instances %+v", instances)
			}
			p := instances[0].Peers[0]
			str := func(a netip.Addr) string {
				if !a.IsValid() {
					return ""
				}
				return a.String()
			}
			if str(p.Address) != c.wantAddr || str(p.LocalAddress) != c.wantLocal || p.Interface != c.wantIface ||
				p.Error != c.wantErr || p.Unnumbered != c.wantUnnumberedOnPeer {
				t.Errorf("peer %s from %s on %q unnumbered %v, error %q;\nwant %s from %s on %q unnumbered %v, error %q",
					str(p.Address), str(p.LocalAddress), p.Interface, p.Unnumbered, p.Error,
					c.wantAddr, c.wantLocal, c.wantIface, c.wantUnnumberedOnPeer, c.wantErr)
			}
		})
	}
}
