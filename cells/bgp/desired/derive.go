package desired

import (
	"cmp"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// ClassBGP is the load balancer class whose LoadBalancer IPs only BGP
// advertises (L2 announcements leave it alone).
const ClassBGP = tables.LBClassBGP

// inputs are the table rows one derivation reads.
type inputs struct {
	// self is this node's Node; nil until the node is known (nothing runs).
	self           *tables.Node
	clusterConfigs []*tables.BGPClusterConfig // sorted by name
	// recordedOwner is the cluster config this node's CiliumBGPNodeConfig
	// holds the instances of ("" for none): it keeps the node when
	// another selects it too (tables.BGPOwnerOf).
	recordedOwner string
	peerConfigs   map[string]*tables.BGPPeerConfig
	adverts       []*tables.BGPAdvertisement // sorted by name
	override      *tables.BGPNodeOverride    // this node's, nil for none
	secrets       map[string]*tables.BGPSecret
	services      []*tables.Service
	// readyHere reports whether a Service has a ready endpoint on this node;
	// served whether it has one anywhere. keepUnserved
	// (enable-no-service-endpoints-routable) advertises the Services
	// without one too.
	readyHere    func(serviceKey string) bool
	served       func(serviceKey string) bool
	keepUnserved bool
	// podPools are the CiliumPodIPPools by name; ciliumNode this node's
	// CiliumNode (nil without multi-pool IPAM).
	podPools   []*tables.PodIPPool
	ciliumNode *tables.CiliumNode
	// multiPool: multi-pool IPAM hands out the pod addresses. PodCIDR
	// entries then advertise nothing, as Cilium's PodCIDR reconciler runs
	// only with kubernetes or cluster-pool IPAM (CanAdvertisePodCIDR): the
	// pods are not in Node.spec.podCIDRs, their CIDRs go out through
	// CiliumPodIPPool entries.
	multiPool bool
	// gateways are the node's default routes by family ("ipv4", "ipv6"),
	// the peers autoDiscovery finds; devices the node's network devices,
	// an IPv6-only node's router ID comes from a MAC address.
	gateways map[string]*tables.BGPDefaultGateway
	devices  []*tables.Device
	// linkNeighbors are the IPv6 link-local neighbours of the interfaces
	// BGP unnumbered peers can be on: such a peer is the one router (or
	// neighbour) of its interface.
	linkNeighbors []*tables.BGPLinkNeighbor
}

// derive computes the bgp-instances and bgp-routes rows of this node. Pure.
//
// The cluster config that owns the node gives its instances: of those that
// select it, the one the node already runs, else the oldest
// (tables.BGPOwnerOf). The others do not apply here at all, as in Cilium:
// their condition ConflictingClusterConfig names the owner, and the
// node's CiliumBGPNodeConfig holds only the owner's instances. Each peer takes
// its settings from its CiliumBGPPeerConfig (Cilium's defaults without
// one), its local address from the node's override, its TCP-MD5 password
// from the auth Secret; a peer whose configuration cannot be completed is
// listed with its error and not run. Each family of a peer sends the
// routes of the CiliumBGPAdvertisements its selector picks. withheld are
// the addresses, by Service, that would be advertised but for the
// Service's having no ready endpoint anywhere.
func derive(in inputs) (instances []*tables.BGPInstance, routes []*tables.BGPRoute, withheld map[string][]netip.Addr) {
	if in.self == nil {
		return nil, nil, nil
	}
	owner := tables.BGPOwnerOf(in.clusterConfigs, in.self.Labels, in.recordedOwner)
	for _, cc := range in.clusterConfigs {
		if cc.Name != owner {
			continue
		}
		for _, spec := range cc.Instances {
			// Instances are keyed by name, in the tables and in the
			// API (listType map): the API server refuses a second one.
			if slices.ContainsFunc(instances, func(i *tables.BGPInstance) bool { return i.Name == spec.Name }) {
				continue
			}
			inst := &tables.BGPInstance{Name: spec.Name, ClusterConfig: cc.Name, LocalASN: spec.LocalASN, ListenPort: -1}
			resolveInstance(in, inst, spec)
			instances = append(instances, inst)
		}
	}

	byKey := map[string]*tables.BGPRoute{}
	withheld = map[string][]netip.Addr{}
	for _, inst := range instances {
		if inst.Error != "" {
			continue
		}
		for _, peer := range inst.Peers {
			if peer.Error != "" {
				continue
			}
			pc := peerConfigOf(in, peer.PeerConfig)
			for _, fam := range pc.Families {
				if fam.SAFI != v2alpha1.BGPSafiUnicast {
					continue
				}
				for _, adv := range in.adverts {
					if !fam.SelectsAdvertisement(adv.Labels) {
						continue
					}
					for _, entry := range adv.Advertisements {
						for _, pr := range prefixesOf(in, entry, fam.IPv6(), withheld) {
							add(byKey, inst.Name, peer, pr.prefix, sentAttributes(entry.Attributes, inst.LocalASN, peer.ASN), pr.reason+" (advertisement "+adv.Name+")")
						}
					}
				}
			}
		}
	}
	routes = make([]*tables.BGPRoute, 0, len(byKey))
	for _, r := range byKey {
		slices.Sort(r.Reasons)
		r.Reasons = slices.Compact(r.Reasons)
		routes = append(routes, r)
	}
	slices.SortFunc(routes, func(a, b *tables.BGPRoute) int { return cmp.Compare(a.Key(), b.Key()) })
	for k, addrs := range withheld {
		slices.SortFunc(addrs, netip.Addr.Compare)
		withheld[k] = slices.Compact(addrs)
	}
	return instances, routes, withheld
}

// sentAttributes are the attributes the peer gets: BGP sends the local
// preference to iBGP peers only (GoBGP drops it for the others), so the
// routes of an eBGP peer, which bgp-routes and explain show, carry none.
func sentAttributes(attrs tables.BGPAttributes, localASN, peerASN int64) tables.BGPAttributes {
	if localASN != peerASN {
		attrs.LocalPreference = nil
	}
	return attrs
}

func add(routes map[string]*tables.BGPRoute, inst string, peer tables.BGPPeer, p netip.Prefix, attrs tables.BGPAttributes, reason string) {
	k := tables.BGPRouteKey(inst, peer.Name, p)
	if r, ok := routes[k]; ok {
		r.Attributes = r.Attributes.Merge(attrs)
		r.Reasons = append(r.Reasons, reason)
		return
	}
	attrs.Error = ""
	routes[k] = &tables.BGPRoute{Instance: inst, Peer: peer.Name, PeerAddress: peer.Address, Prefix: p, Attributes: attrs, Reasons: []string{reason}}
}

// resolveInstance fills in an instance's router ID, port and peers.
func resolveInstance(in inputs, inst *tables.BGPInstance, spec tables.BGPInstanceSpec) {
	ov, _ := in.override.Instance(spec.Name)
	inst.RouterID = ov.RouterID
	routerIDErr := ""
	if !inst.RouterID.IsValid() {
		inst.RouterID, routerIDErr = routerID(in.self, in.devices)
	}
	if spec.LocalPort != 0 {
		inst.ListenPort = spec.LocalPort
	}
	if ov.LocalPort != 0 {
		inst.ListenPort = ov.LocalPort
	}
	if ov.LocalASN != 0 {
		inst.LocalASN = ov.LocalASN
	}
	switch {
	case inst.LocalASN == 0:
		inst.Error = "localASN is not set, in the CiliumBGPClusterConfig or this node's CiliumBGPNodeConfigOverride"
	case !inst.RouterID.IsValid():
		inst.Error = routerIDErr
	case len(ov.Errors) > 0:
		inst.Error = "CiliumBGPNodeConfigOverride " + in.override.Name + ": " + strings.Join(ov.Errors, "; ")
	}
	seen := map[netip.Addr]string{}
	for _, ps := range spec.Peers {
		peer := resolvePeer(in, ps, ov)
		if peer.Error == "" {
			if other, dup := seen[peer.Address]; dup {
				peer.Error = fmt.Sprintf("peer %q has the same address %s", other, peer.Address)
			} else {
				seen[peer.Address] = peer.Name
			}
		}
		inst.Peers = append(inst.Peers, peer)
	}
}

func resolvePeer(in inputs, ps tables.BGPPeerSpec, ov tables.BGPInstanceOverride) tables.BGPPeer {
	peer := tables.BGPPeer{Name: ps.Name, Address: ps.Address, ASN: ps.ASN, PeerConfig: ps.PeerConfig, LocalAddress: ov.LocalAddress[ps.Name]}
	var gw *tables.BGPDefaultGateway
	if ps.DiscoverFamily != "" {
		peer.DiscoveredFamily = ps.DiscoverFamily
		if gw = in.gateways[ps.DiscoverFamily]; gw != nil {
			peer.Address = gw.Gateway
		}
	}
	pc := peerConfigOf(in, ps.PeerConfig)
	if pc != nil {
		peer.PeerPort, peer.ConnectRetrySeconds, peer.HoldTimeSeconds, peer.KeepAliveSeconds = pc.PeerPort, pc.ConnectRetrySeconds, pc.HoldTimeSeconds, pc.KeepAliveSeconds
		peer.EBGPMultihop, peer.GracefulRestart, peer.RestartTimeSeconds = pc.EBGPMultihop, pc.GracefulRestart, pc.RestartTimeSeconds
		peer.AuthSecret = pc.AuthSecret
		if pc.BFD != nil {
			bfd := *pc.BFD
			peer.BFD = &bfd
		}
		for _, f := range pc.Families {
			peer.Families = append(peer.Families, f.AFI+"-"+f.SAFI)
		}
		if !peer.LocalAddress.IsValid() && pc.SourceInterface != "" && peer.Address.IsValid() {
			peer.LocalAddress = sourceAddress(in.devices, pc.SourceInterface, peer.Address.Is6())
		}
	}
	linkErr := ""
	if ps.AddressError == "" && (ps.Unnumbered || ps.Interface != "") {
		linkErr = resolveLinkLocal(in, ps, &peer)
	}
	switch {
	case ps.AddressError != "":
		peer.Error = "peerAddress: " + ps.AddressError
	case linkErr != "":
		peer.Error = linkErr
	case ps.DiscoverFamily != "" && gw == nil:
		peer.Error = "autoDiscovery: the node has no " + ps.DiscoverFamily + " default route with a gateway"
	case ps.DiscoverFamily != "" && gw.Gateway.IsLinkLocalUnicast():
		// As in Cilium: a session needs an address the peer is
		// configured for, and a link-local one also needs its interface.
		peer.Error = fmt.Sprintf("autoDiscovery: the %s default route's gateway %s (device %s) is link-local, which autoDiscovery does not support; set peerAddress",
			ps.DiscoverFamily, gw.Gateway.WithZone(""), gw.Device)
		peer.Address = netip.Addr{}
	case !peer.Address.IsValid():
		peer.Error = "neither peerAddress nor autoDiscovery (mode DefaultGateway or Unnumbered) is set"
	case ps.ASN == 0:
		peer.Error = "peerASN is not set"
	case pc == nil:
		peer.Error = fmt.Sprintf("CiliumBGPPeerConfig %q not found", ps.PeerConfig)
	case len(pc.Errors) > 0:
		peer.Error = fmt.Sprintf("CiliumBGPPeerConfig %q: %s", ps.PeerConfig, strings.Join(pc.Errors, "; "))
	case pc.AuthSecret != "":
		s, ok := in.secrets[pc.AuthSecret]
		switch {
		case !ok:
			peer.Error = fmt.Sprintf("auth Secret %q (of CiliumBGPPeerConfig %q) not found in the BGP secrets namespace", pc.AuthSecret, ps.PeerConfig)
		case !s.HasPassword:
			peer.Error = fmt.Sprintf("auth Secret %q has no \"password\" key", pc.AuthSecret)
		default:
			peer.Password, peer.PasswordVersion = s.Password, s.ResourceVersion
		}
	}
	return peer
}

// sourceAddress is the address of the interface named name that a session
// to a peer of the family starts from: its one address of the family that
// is not loopback, multicast or IPv6 link-local. Invalid (the kernel
// picks, as Cilium falls back to) when the interface is missing, or has
// none or several such addresses.
func sourceAddress(devices []*tables.Device, name string, ipv6 bool) netip.Addr {
	i := slices.IndexFunc(devices, func(d *tables.Device) bool { return d.Name == name })
	if i < 0 {
		return netip.Addr{}
	}
	var found []netip.Addr
	for _, a := range devices[i].Addresses {
		ip := a.Addr
		if ip.Is6() != ipv6 || ip.Is4In6() || ip.IsLoopback() || ip.IsMulticast() || (ip.Is6() && ip.IsLinkLocalUnicast()) {
			continue
		}
		if !slices.Contains(found, ip) {
			found = append(found, ip)
		}
	}
	if len(found) != 1 {
		return netip.Addr{}
	}
	return found[0]
}

// peerConfigOf returns a peer's config: the named one (nil when missing),
// or the defaults for "".
func peerConfigOf(in inputs, name string) *tables.BGPPeerConfig {
	if name == "" {
		return tables.DefaultBGPPeerConfig()
	}
	return in.peerConfigs[name]
}
