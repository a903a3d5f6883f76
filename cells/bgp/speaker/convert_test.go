package speaker

import (
	"net/netip"
	"testing"

	api "github.com/osrg/gobgp/v3/api"

	"github.com/heraldlb/herald/tables"
)

func TestPeerToAPI(t *testing.T) {
	p := tables.BGPPeer{Name: "tor", Address: netip.MustParseAddr("198.18.0.1"), ASN: 65000, LocalAddress: netip.MustParseAddr("198.18.0.11"),
		PeerPort: 1179, ConnectRetrySeconds: 5, HoldTimeSeconds: 9, KeepAliveSeconds: 3, EBGPMultihop: 4,
		GracefulRestart: true, RestartTimeSeconds: 30, Families: []string{"ipv4-unicast", "ipv6-unicast", "l2vpn-evpn"}, Password: "pw"}
	got := peerToAPI(p)
	switch {
	case got.Conf.NeighborAddress != "198.18.0.1" || got.Conf.PeerAsn != 65000 || got.Conf.AuthPassword != "pw":
		t.Errorf("conf %+v", got.Conf)
	case got.Transport.LocalAddress != "198.18.0.11" || got.Transport.LocalPort != 0 || got.Transport.RemotePort != 1179:
		t.Errorf("transport %+v", got.Transport)
	case got.Timers.Config.HoldTime != 9 || got.Timers.Config.KeepaliveInterval != 3 || got.Timers.Config.ConnectRetry != 5:
		t.Errorf("timers %+v", got.Timers.Config)
	case !got.EbgpMultihop.Enabled || got.EbgpMultihop.MultihopTtl != 4:
		t.Errorf("multihop %+v", got.EbgpMultihop)
	case !got.GracefulRestart.Enabled || got.GracefulRestart.RestartTime != 30:
		t.Errorf("graceful restart %+v", got.GracefulRestart)
	case len(got.AfiSafis) != 2 || !got.AfiSafis[1].MpGracefulRestart.Config.Enabled || got.AfiSafis[1].Config.Family.Afi != api.Family_AFI_IP6:
		t.Errorf("families %+v (unknown families are left out)", got.AfiSafis)
	}

	plain := peerToAPI(tables.BGPPeer{Address: netip.MustParseAddr("fd00::1"), ASN: 1, EBGPMultihop: 1, Families: []string{"ipv6-unicast"}})
	if plain.EbgpMultihop != nil || plain.GracefulRestart != nil || plain.Transport.LocalAddress != "" || plain.AfiSafis[0].MpGracefulRestart != nil ||
		plain.Transport.BindInterface != "" {
		t.Errorf("defaults set what was not asked for: %+v", plain)
	}

	// A link-local peer: the zone goes with the neighbor address, the
	// session is bound to the interface, and the local address (GoBGP's
	// next hop) has no zone.
	ll := peerToAPI(tables.BGPPeer{Address: netip.MustParseAddr("fe80::1%eth1"), LocalAddress: netip.MustParseAddr("fe80::11"),
		Interface: "eth1", Unnumbered: true, ASN: 1, Families: []string{"ipv4-unicast", "ipv6-unicast"}})
	if ll.Conf.NeighborAddress != "fe80::1%eth1" || ll.Transport.LocalAddress != "fe80::11" || ll.Transport.BindInterface != "eth1" {
		t.Errorf("link-local peer: conf %+v, transport %+v", ll.Conf, ll.Transport)
	}
}

func TestExportNames(t *testing.T) {
	a := exportKey{peer: netip.MustParseAddr("fd00::1"), ipv6: true, attrs: "c=1:1"}
	b := exportKey{peer: netip.MustParseAddr("fd00::1"), ipv6: true, attrs: "c=1:2"}
	if a.name() == b.name() {
		t.Errorf("different attributes share a policy name %q", a.name())
	}
	if a.name() != (exportKey{peer: netip.MustParseAddr("fd00::1"), ipv6: true, attrs: "c=1:1"}).name() {
		t.Error("names are not stable")
	}
	lp := int64(7)
	pol := exportPolicy(a, tables.BGPAttributes{Communities: []string{"1:1"}, LargeCommunities: []string{"1:2:3"}, LocalPreference: &lp})
	s := pol.Statements[0]
	if s.Conditions.NeighborSet.Name != neighborSetName(a.peer) || s.Conditions.PrefixSet.Name != a.name() ||
		s.Actions.RouteAction != api.RouteAction_ACCEPT || s.Actions.Community.Communities[0] != "1:1" ||
		s.Actions.LargeCommunity.Communities[0] != "1:2:3" || s.Actions.LocalPref.Value != 7 {
		t.Errorf("policy %+v", pol)
	}
	if s.Actions.Nexthop != nil {
		t.Errorf("a policy without a next hop sets one: %+v", s.Actions.Nexthop)
	}
	nh := exportKey{peer: netip.MustParseAddr("198.18.0.1"), ipv6: true, attrs: "c=1:1", nextHop: netip.MustParseAddr("fd00::11")}
	if nh.name() == (exportKey{peer: nh.peer, ipv6: true, attrs: "c=1:1"}).name() {
		t.Error("a next hop does not change the policy name")
	}
	if got := exportPolicy(nh, tables.BGPAttributes{}).Statements[0].Actions.Nexthop; got == nil || got.Address != "fd00::11" {
		t.Errorf("next hop action %+v, want fd00::11", got)
	}
	if got := prefixSet("x", netip.MustParsePrefix("198.18.0.1/32")).Prefixes[0]; got.MaskLengthMin != 32 || got.MaskLengthMax != 32 {
		t.Errorf("prefix set matches more than the prefix: %+v", got)
	}
}

func TestPathOf(t *testing.T) {
	for _, p := range []string{"198.18.0.1/32", "fd00::1/128"} {
		path, err := pathOf(netip.MustParsePrefix(p))
		if err != nil {
			t.Fatal(err)
		}
		if path.Family != familyOf(netip.MustParsePrefix(p)) || len(path.Pattrs) != 2 {
			t.Errorf("%s: %+v", p, path)
		}
	}
}

// Every GoBGP session state reads as Cilium's SessionState.String does.
func TestSessionStateAsCilium(t *testing.T) {
	for state, want := range map[api.PeerState_SessionState]string{
		api.PeerState_UNKNOWN:     "unknown",
		api.PeerState_IDLE:        "idle",
		api.PeerState_CONNECT:     "connect",
		api.PeerState_ACTIVE:      "active",
		api.PeerState_OPENSENT:    "open_sent",
		api.PeerState_OPENCONFIRM: "open_confirm",
		api.PeerState_ESTABLISHED: "established",
	} {
		if got := sessionState(state); got != want {
			t.Errorf("sessionState(%s) = %q, want %q", state, got, want)
		}
	}
}
