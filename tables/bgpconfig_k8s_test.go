package tables

import (
	"net/netip"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// How a cluster config's peer names its address: an address, a zone or
// peerInterface with a link-local one, or autoDiscovery.
func TestBGPClusterConfigPeerAddressing(t *testing.T) {
	unnumbered := func(ad v2alpha1.BGPAutoDiscovery) *v2alpha1.BGPAutoDiscovery {
		ad.Mode = v2alpha1.BGPUnnumberedMode
		return &ad
	}
	for _, c := range []struct {
		name string
		peer v2alpha1.CiliumBGPPeer
		want BGPPeerSpec
	}{
		{"an address", v2alpha1.CiliumBGPPeer{PeerAddress: ptr.To("198.18.0.1")},
			BGPPeerSpec{Address: netip.MustParseAddr("198.18.0.1")}},
		{"a link-local address with peerInterface", v2alpha1.CiliumBGPPeer{PeerAddress: ptr.To("fe80::1"), PeerInterface: ptr.To("eth1")},
			BGPPeerSpec{Address: netip.MustParseAddr("fe80::1"), Interface: "eth1"}},
		{"a zone names the interface", v2alpha1.CiliumBGPPeer{PeerAddress: ptr.To("fe80::1%eth2")},
			BGPPeerSpec{Address: netip.MustParseAddr("fe80::1"), Interface: "eth2"}},
		{"peerInterface with a global address", v2alpha1.CiliumBGPPeer{PeerAddress: ptr.To("fd00::1"), PeerInterface: ptr.To("eth1")},
			BGPPeerSpec{Address: netip.MustParseAddr("fd00::1"), Interface: "eth1",
				AddressError: "fd00::1 is not an IPv6 link-local address, which an interface (peerInterface, or a zone of peerAddress) needs"}},
		{"unnumbered on a named interface", v2alpha1.CiliumBGPPeer{AutoDiscovery: unnumbered(v2alpha1.BGPAutoDiscovery{Unnumbered: &v2alpha1.BGPUnnumbered{Interface: "eth0"}})},
			BGPPeerSpec{Unnumbered: true, Interface: "eth0"}},
		{"unnumbered on the default route's interface", v2alpha1.CiliumBGPPeer{AutoDiscovery: unnumbered(v2alpha1.BGPAutoDiscovery{DefaultGateway: &v2alpha1.DefaultGateway{AddressFamily: "ipv6"}})},
			BGPPeerSpec{Unnumbered: true, UnnumberedFamily: "ipv6"}},
		{"the default gateway", v2alpha1.CiliumBGPPeer{AutoDiscovery: &v2alpha1.BGPAutoDiscovery{Mode: v2alpha1.BGPDefaultGatewayMode, DefaultGateway: &v2alpha1.DefaultGateway{AddressFamily: "ipv4"}}},
			BGPPeerSpec{DiscoverFamily: "ipv4"}},
		{"peerAddress wins over autoDiscovery", v2alpha1.CiliumBGPPeer{PeerAddress: ptr.To("198.18.0.1"), AutoDiscovery: unnumbered(v2alpha1.BGPAutoDiscovery{Unnumbered: &v2alpha1.BGPUnnumbered{Interface: "eth0"}})},
			BGPPeerSpec{Address: netip.MustParseAddr("198.18.0.1")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.peer.Name = "tor"
			cc := &v2alpha1.CiliumBGPClusterConfig{Spec: v2alpha1.CiliumBGPClusterConfigSpec{BGPInstances: []v2alpha1.CiliumBGPInstance{{Name: "main", Peers: []v2alpha1.CiliumBGPPeer{c.peer}}}}}
			got := BGPClusterConfigFromK8s(cc).Instances[0].Peers[0]
			c.want.Name = "tor"
			if got != c.want {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

// An override's per-peer localPort, deprecated in Cilium and without
// effect there, is only noted (to be logged); its localAddress applies.
func TestBGPNodeOverridePeerLocalPort(t *testing.T) {
	o := BGPNodeOverrideFromK8s(&v2alpha1.CiliumBGPNodeConfigOverride{Spec: v2alpha1.CiliumBGPNodeConfigOverrideSpec{
		BGPInstances: []v2alpha1.CiliumBGPNodeConfigInstanceOverride{{Name: "main", LocalPort: ptr.To[int32](1790), Peers: []v2alpha1.CiliumBGPNodeConfigPeerOverride{
			{Name: "tor", LocalAddress: ptr.To("198.18.0.11"), LocalPort: ptr.To[int32](1791)},
			{Name: "tor6", LocalAddress: ptr.To("fd00::11")},
		}}}}})
	i := o.Instances[0]
	if i.LocalPort != 1790 || len(i.IgnoredPeerLocalPorts) != 1 || i.IgnoredPeerLocalPorts[0] != "tor" ||
		i.LocalAddress["tor"] != netip.MustParseAddr("198.18.0.11") || i.LocalAddress["tor6"] != netip.MustParseAddr("fd00::11") || len(i.Errors) != 0 {
		t.Errorf("override %+v, want the instance's listen port 1790, tor's localPort ignored, both local addresses", i)
	}
}
