package speaker

import (
	"fmt"
	"hash/fnv"
	"net/netip"
	"strings"

	api "github.com/osrg/gobgp/v3/api"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// The pure half of the speaker: how Herald's rows become GoBGP's API
// objects. Everything Herald creates in GoBGP is named "herald-...".

var (
	familyIPv4 = &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}
	familyIPv6 = &api.Family{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST}
)

func familyOf(p netip.Prefix) *api.Family {
	if p.Addr().Is6() {
		return familyIPv6
	}
	return familyIPv4
}

// peerToAPI is the GoBGP neighbor of a peer: it connects to the peer (the
// peer may connect too when the instance listens), with the peer config's
// timers, multihop, graceful restart and families.
func peerToAPI(p tables.BGPPeer) *api.Peer {
	out := &api.Peer{
		Conf: &api.PeerConf{
			NeighborAddress: p.Address.String(),
			PeerAsn:         uint32(p.ASN),
			AuthPassword:    p.Password,
		},
		Transport: &api.Transport{RemotePort: uint32(p.PeerPort)},
		Timers: &api.Timers{Config: &api.TimersConfig{
			ConnectRetry:      uint64(p.ConnectRetrySeconds),
			HoldTime:          uint64(p.HoldTimeSeconds),
			KeepaliveInterval: uint64(p.KeepAliveSeconds),
			// Cilium's value: a session that was reset comes back soon.
			IdleHoldTimeAfterReset: 5,
		}},
	}
	if p.LocalAddress.IsValid() {
		out.Transport.LocalAddress = p.LocalAddress.String()
	}
	if p.Interface != "" {
		// A link-local peer: the session is bound to the interface, and
		// LocalAddress is its link-local address without a zone, which
		// the bound socket needs no more and which GoBGP takes as the
		// next hop of the routes (an address with a zone it cannot
		// parse, and would send routes without one).
		out.Transport.BindInterface = p.Interface
	}
	if p.EBGPMultihop > 1 {
		out.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: uint32(p.EBGPMultihop)}
	}
	if p.GracefulRestart {
		out.GracefulRestart = &api.GracefulRestart{Enabled: true, RestartTime: uint32(p.RestartTimeSeconds), NotificationEnabled: true}
	}
	for _, f := range p.Families {
		var fam *api.Family
		switch f {
		case v2alpha1.BGPAfiIPv4 + "-" + v2alpha1.BGPSafiUnicast:
			fam = familyIPv4
		case v2alpha1.BGPAfiIPv6 + "-" + v2alpha1.BGPSafiUnicast:
			fam = familyIPv6
		default:
			continue
		}
		as := &api.AfiSafi{Config: &api.AfiSafiConfig{Family: fam, Enabled: true}}
		if p.GracefulRestart {
			as.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
		}
		out.AfiSafis = append(out.AfiSafis, as)
	}
	return out
}

// pathOf is the locally originated path of a prefix. Its next hop is
// unspecified, so GoBGP sends each peer the local address of that
// session: every node is its own next hop, and the routers see one path
// per node (ECMP).
func pathOf(p netip.Prefix) (*api.Path, error) {
	nlri, err := anypb.New(&api.IPAddressPrefix{Prefix: p.Addr().String(), PrefixLen: uint32(p.Bits())})
	if err != nil {
		return nil, err
	}
	origin, err := anypb.New(&api.OriginAttribute{Origin: 0}) // IGP
	if err != nil {
		return nil, err
	}
	attrs := []*anypb.Any{origin}
	if p.Addr().Is6() {
		mp, err := anypb.New(&api.MpReachNLRIAttribute{Family: familyIPv6, NextHops: []string{"::"}, Nlris: []*anypb.Any{nlri}})
		if err != nil {
			return nil, err
		}
		attrs = append(attrs, mp)
	} else {
		nh, err := anypb.New(&api.NextHopAttribute{NextHop: "0.0.0.0"})
		if err != nil {
			return nil, err
		}
		attrs = append(attrs, nh)
	}
	return &api.Path{Family: familyOf(p), Nlri: nlri, Pattrs: attrs}, nil
}

// exportKey identifies an export policy: the routes of one family to one
// peer address with one set of attributes share it (and its prefix set).
type exportKey struct {
	peer  netip.Addr
	ipv6  bool
	attrs string // tables.BGPAttributes.Key()
	// nextHop is the IPv6 next hop of IPv6 routes to an IPv4 peer
	// (nexthop.go); invalid otherwise: GoBGP uses the session's address.
	nextHop netip.Addr
}

// exportsOf gives, by peer, the export (and so the policy) each route
// puts the prefix in, and the attributes of each export. An IPv6 prefix
// goes to an IPv4 peer with the peer's IPv6 next hop, and not at all
// while it has none.
func exportsOf(p netip.Prefix, routes []*tables.BGPRoute, hops map[string]nextHop6) (map[string]exportKey, map[exportKey]tables.BGPAttributes) {
	want := map[string]exportKey{}
	attrs := map[exportKey]tables.BGPAttributes{}
	for _, r := range routes {
		nh, ok := nextHopOf(hops, r.Peer, p)
		if !ok {
			continue
		}
		k := exportKey{peer: r.PeerAddress, ipv6: p.Addr().Is6(), attrs: r.Attributes.Key(), nextHop: nh}
		want[r.Peer] = k
		attrs[k] = r.Attributes
	}
	return want, attrs
}

// name is the policy's (and its prefix set's) name in GoBGP.
func (k exportKey) name() string {
	h := fnv.New32a()
	h.Write([]byte(k.attrs))
	if k.nextHop.IsValid() {
		h.Write([]byte(" nexthop " + k.nextHop.String()))
	}
	fam := "v4"
	if k.ipv6 {
		fam = "v6"
	}
	return fmt.Sprintf("herald-%s-%s-%08x", strings.ReplaceAll(k.peer.String(), ":", "."), fam, h.Sum32())
}

// neighborSetName is the defined set holding one peer address.
func neighborSetName(peer netip.Addr) string {
	return "herald-peer-" + strings.ReplaceAll(peer.String(), ":", ".")
}

func neighborSet(peer netip.Addr) *api.DefinedSet {
	return &api.DefinedSet{DefinedType: api.DefinedType_NEIGHBOR, Name: neighborSetName(peer),
		List: []string{netip.PrefixFrom(peer, peer.BitLen()).String()}}
}

func prefixSet(name string, prefixes ...netip.Prefix) *api.DefinedSet {
	s := &api.DefinedSet{DefinedType: api.DefinedType_PREFIX, Name: name}
	for _, p := range prefixes {
		s.Prefixes = append(s.Prefixes, &api.Prefix{IpPrefix: p.String(), MaskLengthMin: uint32(p.Bits()), MaskLengthMax: uint32(p.Bits())})
	}
	return s
}

// exportPolicy accepts the prefixes of its prefix set towards its peer,
// adds the attributes and sets the next hop it names.
func exportPolicy(k exportKey, attrs tables.BGPAttributes) *api.Policy {
	actions := &api.Actions{RouteAction: api.RouteAction_ACCEPT}
	if len(attrs.Communities) > 0 {
		actions.Community = &api.CommunityAction{Type: api.CommunityAction_ADD, Communities: attrs.Communities}
	}
	if len(attrs.LargeCommunities) > 0 {
		actions.LargeCommunity = &api.CommunityAction{Type: api.CommunityAction_ADD, Communities: attrs.LargeCommunities}
	}
	if attrs.LocalPreference != nil {
		actions.LocalPref = &api.LocalPrefAction{Value: uint32(*attrs.LocalPreference)}
	}
	if k.nextHop.IsValid() {
		actions.Nexthop = &api.NexthopAction{Address: k.nextHop.String()}
	}
	name := k.name()
	return &api.Policy{Name: name, Statements: []*api.Statement{{
		Name: name,
		Conditions: &api.Conditions{
			PrefixSet:   &api.MatchSet{Type: api.MatchSet_ANY, Name: name},
			NeighborSet: &api.MatchSet{Type: api.MatchSet_ANY, Name: neighborSetName(k.peer)},
		},
		Actions: actions,
	}}}
}

// sessionState is Cilium's peeringState text of a GoBGP session state.
func sessionState(s api.PeerState_SessionState) string {
	switch s {
	case api.PeerState_IDLE:
		return tables.BGPStateIdle
	case api.PeerState_CONNECT:
		return tables.BGPStateConnect
	case api.PeerState_ACTIVE:
		return tables.BGPStateActive
	case api.PeerState_OPENSENT:
		return tables.BGPStateOpenSent
	case api.PeerState_OPENCONFIRM:
		return tables.BGPStateOpenConfirm
	case api.PeerState_ESTABLISHED:
		return tables.BGPStateEstablished
	}
	return tables.BGPStateUnknown
}
