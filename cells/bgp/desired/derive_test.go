package desired

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

func node(name string, labels map[string]string, ip string, podCIDRs ...string) *tables.Node {
	n := &tables.Node{Name: name, Labels: labels}
	if ip != "" {
		n.InternalIPs = []netip.Addr{netip.MustParseAddr(ip)}
	}
	for _, c := range podCIDRs {
		n.PodCIDRs = append(n.PodCIDRs, netip.MustParsePrefix(c))
	}
	return n
}

func lbService(key, class, etp string, ips ...string) *tables.Service {
	ns, name, _ := strings.Cut(key, "/")
	s := &tables.Service{Namespace: ns, Name: name, Type: "LoadBalancer", LoadBalancerClass: class, ExternalTrafficPolicy: etp,
		Labels: tables.LabelSetOf(map[string]string{"bgp": "yes"})}
	for _, ip := range ips {
		s.IngressIPs = append(s.IngressIPs, netip.MustParseAddr(ip))
	}
	return s
}

var sel = &metav1.LabelSelector{MatchLabels: map[string]string{"bgp": "yes"}}

func clusterConfig(name string, peerConfig string) *tables.BGPClusterConfig {
	return &tables.BGPClusterConfig{Name: name, Instances: []tables.BGPInstanceSpec{{
		Name: "main", LocalASN: 65001,
		Peers: []tables.BGPPeerSpec{{Name: "tor", Address: netip.MustParseAddr("198.18.0.1"), ASN: 65000, PeerConfig: peerConfig}},
	}}}
}

func peerConfig(name string, secret string) *tables.BGPPeerConfig {
	pc := tables.DefaultBGPPeerConfig()
	pc.Name, pc.AuthSecret = name, secret
	for i := range pc.Families {
		pc.Families[i].Advertisements = &metav1.LabelSelector{MatchLabels: map[string]string{"advertise": "bgp"}}
	}
	return pc
}

func advert(name string, entries ...tables.BGPAdvert) *tables.BGPAdvertisement {
	return &tables.BGPAdvertisement{Name: name, Labels: map[string]string{"advertise": "bgp"}, Advertisements: entries}
}

var lbAdvert = tables.BGPAdvert{Type: v2alpha1.BGPServiceAdvert, Addresses: []v2alpha1.BGPServiceAddressType{v2alpha1.BGPLoadBalancerIPAddr}, Selector: sel}

// routeLines renders routes as "instance peer prefix attrs | reasons".
func routeLines(rs []*tables.BGPRoute) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Instance+" "+r.Peer+" "+r.Prefix.String()+" "+r.Attributes.String()+" | "+strings.Join(r.Reasons, "; "))
	}
	return out
}

func TestDerive(t *testing.T) {
	self := node("node1", map[string]string{"rack": "a"}, "198.18.0.11", "198.18.100.0/24", "fd00:18:100::/64")
	base := func() inputs {
		return inputs{
			self:           self,
			clusterConfigs: []*tables.BGPClusterConfig{clusterConfig("cc", "pc")},
			peerConfigs:    map[string]*tables.BGPPeerConfig{"pc": peerConfig("pc", "")},
			adverts:        []*tables.BGPAdvertisement{advert("lb", lbAdvert)},
			secrets:        map[string]*tables.BGPSecret{},
			readyHere:      func(string) bool { return false },
			served:         func(string) bool { return true },
		}
	}
	lp := int64(200)
	tests := []struct {
		name       string
		edit       func(*inputs)
		wantRoutes []string
		wantErrors []string // instance or peer errors, by substring
		// wantWithheld: "service: addresses" not advertised for want of a
		// ready endpoint anywhere.
		wantWithheld []string
	}{
		{
			name: "no ready endpoint anywhere: withheld, Cluster and Local alike",
			edit: func(in *inputs) {
				in.services = []*tables.Service{
					lbService("default/served", "", "Cluster", "198.18.200.1"),
					lbService("default/cluster", "", "Cluster", "198.18.200.2", "fd00:18:200::2"),
					lbService("default/local", "", "Local", "198.18.200.3"),
					lbService("default/other-class", "io.cilium/l2-announcer", "Cluster", "198.18.200.4"),
				}
				in.readyHere = func(k string) bool { return k == "default/served" }
				in.served = func(k string) bool { return k == "default/served" }
			},
			wantRoutes:   []string{"main tor 198.18.200.1/32  | Service default/served LoadBalancerIP (advertisement lb)"},
			wantWithheld: []string{"default/cluster: 198.18.200.2 fd00:18:200::2", "default/local: 198.18.200.3"},
		},
		{
			name: "no ready endpoint anywhere, enable-no-service-endpoints-routable: advertised as before",
			edit: func(in *inputs) {
				in.services = []*tables.Service{lbService("default/cluster", "", "Cluster", "198.18.200.2"), lbService("default/local", "", "Local", "198.18.200.3")}
				in.served = func(string) bool { return false }
				in.keepUnserved = true
			},
			wantRoutes: []string{"main tor 198.18.200.2/32  | Service default/cluster LoadBalancerIP (advertisement lb)"},
		},
		{
			name: "LoadBalancer IPs of no class and of the BGP class, not of others",
			edit: func(in *inputs) {
				in.services = []*tables.Service{
					lbService("default/a", "", "Cluster", "198.18.200.1"),
					lbService("default/b", ClassBGP, "Cluster", "198.18.200.2"),
					lbService("default/c", "io.cilium/l2-announcer", "Cluster", "198.18.200.3"),
				}
			},
			wantRoutes: []string{
				"main tor 198.18.200.1/32  | Service default/a LoadBalancerIP (advertisement lb)",
				"main tor 198.18.200.2/32  | Service default/b LoadBalancerIP (advertisement lb)",
			},
		},
		{
			name: "IPv6 addresses go in the IPv6 family as /128",
			edit: func(in *inputs) {
				in.services = []*tables.Service{lbService("default/a", "", "Cluster", "198.18.200.1", "fd00:18:200::1")}
			},
			wantRoutes: []string{
				"main tor 198.18.200.1/32  | Service default/a LoadBalancerIP (advertisement lb)",
				"main tor fd00:18:200::1/128  | Service default/a LoadBalancerIP (advertisement lb)",
			},
		},
		{
			name: "externalTrafficPolicy Local: only with a ready endpoint on this node",
			edit: func(in *inputs) {
				in.services = []*tables.Service{lbService("default/here", "", "Local", "198.18.200.1"), lbService("default/away", "", "Local", "198.18.200.2")}
				in.readyHere = func(k string) bool { return k == "default/here" }
			},
			wantRoutes: []string{"main tor 198.18.200.1/32  | Service default/here LoadBalancerIP (advertisement lb)"},
		},
		{
			name: "a node the cluster config does not select runs nothing",
			edit: func(in *inputs) {
				in.clusterConfigs[0].NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"rack": "b"}}
				in.services = []*tables.Service{lbService("default/a", "", "Cluster", "198.18.200.1")}
			},
		},
		{
			name: "a family without an advertisement selector advertises nothing",
			edit: func(in *inputs) {
				in.peerConfigs["pc"].Families[0].Advertisements = nil
				in.peerConfigs["pc"].Families[1].Advertisements = nil
				in.services = []*tables.Service{lbService("default/a", "", "Cluster", "198.18.200.1")}
			},
		},
		{
			name: "two advertisements of one prefix: attributes merged, both reasons",
			edit: func(in *inputs) {
				in.clusterConfigs[0].Instances[0].Peers[0].ASN = 65001 // iBGP: gets the local preference
				a := lbAdvert
				a.Attributes = tables.NewBGPAttributes([]string{"65000:100"}, nil, nil, nil)
				b := lbAdvert
				b.Attributes = tables.NewBGPAttributes([]string{"65000:200"}, []string{"no-export"}, nil, &lp)
				in.adverts = []*tables.BGPAdvertisement{advert("a", a), advert("b", b)}
				in.services = []*tables.Service{lbService("default/a", "", "Cluster", "198.18.200.1")}
			},
			wantRoutes: []string{"main tor 198.18.200.1/32 communities=65000:100,65000:200,65535:65281 localPref=200 | Service default/a LoadBalancerIP (advertisement a); Service default/a LoadBalancerIP (advertisement b)"},
		},
		{
			name: "an eBGP peer gets no local preference",
			edit: func(in *inputs) {
				a := lbAdvert
				a.Attributes = tables.NewBGPAttributes([]string{"65000:100"}, nil, nil, &lp)
				in.adverts = []*tables.BGPAdvertisement{advert("a", a)}
				in.services = []*tables.Service{lbService("default/a", "", "Cluster", "198.18.200.1")}
			},
			wantRoutes: []string{"main tor 198.18.200.1/32 communities=65000:100 | Service default/a LoadBalancerIP (advertisement a)"},
		},
		{
			name: "PodCIDR: the node's pod CIDRs in their families",
			edit: func(in *inputs) {
				in.adverts = []*tables.BGPAdvertisement{advert("pods", tables.BGPAdvert{Type: v2alpha1.BGPPodCIDRAdvert})}
			},
			wantRoutes: []string{
				"main tor 198.18.100.0/24  | PodCIDR of node node1 (advertisement pods)",
				"main tor fd00:18:100::/64  | PodCIDR of node node1 (advertisement pods)",
			},
		},
		{
			name: "PodCIDR with multi-pool IPAM: nothing, as Cilium (the pools' CIDRs go out as CiliumPodIPPool)",
			edit: func(in *inputs) {
				in.adverts = []*tables.BGPAdvertisement{advert("pods", tables.BGPAdvert{Type: v2alpha1.BGPPodCIDRAdvert})}
				in.multiPool = true
			},
		},
		{
			name: "CiliumPodIPPool: the node's CIDRs of the selected pools",
			edit: func(in *inputs) {
				in.adverts = []*tables.BGPAdvertisement{advert("pools", tables.BGPAdvert{Type: v2alpha1.BGPCiliumPodIPPoolAdvert,
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"routed": "true"}}})}
				in.podPools = []*tables.PodIPPool{{Name: "green", Labels: map[string]string{"routed": "true"}}, {Name: "blue"}}
				in.ciliumNode = &tables.CiliumNode{Name: "node1", Allocated: []tables.PoolCIDRs{
					{Pool: "green", CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.120.0/27")}},
					{Pool: "blue", CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.121.0/27")}},
				}}
			},
			wantRoutes: []string{"main tor 198.18.120.0/27  | CiliumPodIPPool green (advertisement pools)"},
		},
		{
			name: "CiliumPodIPPool: a pool selected by name (io.cilium.podippool.name), as in Cilium",
			edit: func(in *inputs) {
				in.adverts = []*tables.BGPAdvertisement{advert("pools", tables.BGPAdvert{Type: v2alpha1.BGPCiliumPodIPPoolAdvert,
					Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"io.cilium.podippool.name": "blue", "io.cilium.podippool.namespace": ""}}})}
				in.podPools = []*tables.PodIPPool{{Name: "green", Labels: map[string]string{"routed": "true"}}, {Name: "blue"}}
				in.ciliumNode = &tables.CiliumNode{Name: "node1", Allocated: []tables.PoolCIDRs{
					{Pool: "green", CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.120.0/27")}},
					{Pool: "blue", CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.121.0/27")}},
				}}
			},
			wantRoutes: []string{"main tor 198.18.121.0/27  | CiliumPodIPPool blue (advertisement pools)"},
		},
		{
			name: "a missing peer config: the peer is not configured",
			edit: func(in *inputs) {
				in.clusterConfigs[0].Instances[0].Peers[0].PeerConfig = "nope"
				in.services = []*tables.Service{lbService("default/a", "", "Cluster", "198.18.200.1")}
			},
			wantErrors: []string{`CiliumBGPPeerConfig "nope" not found`},
		},
		{
			name: "a missing auth Secret: the peer is not configured",
			edit: func(in *inputs) {
				in.peerConfigs["pc"].AuthSecret = "md5"
				in.services = []*tables.Service{lbService("default/a", "", "Cluster", "198.18.200.1")}
			},
			wantErrors: []string{`auth Secret "md5"`},
		},
		{
			name: "no IPv4 InternalIP and no override: no router ID",
			edit: func(in *inputs) {
				in.self = node("node1", nil, "")
			},
			wantErrors: []string{"no router ID"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base()
			tt.edit(&in)
			instances, routes, withheld := derive(in)
			if got := routeLines(routes); !slices.Equal(got, tt.wantRoutes) {
				t.Errorf("routes:\n got %q\nwant %q", got, tt.wantRoutes)
			}
			var gotWithheld []string
			for k, addrs := range withheld {
				line := k + ":"
				for _, a := range addrs {
					line += " " + a.String()
				}
				gotWithheld = append(gotWithheld, line)
			}
			slices.Sort(gotWithheld)
			if !slices.Equal(gotWithheld, tt.wantWithheld) {
				t.Errorf("withheld:\n got %q\nwant %q", gotWithheld, tt.wantWithheld)
			}
			var errs []string
			for _, i := range instances {
				if i.Error != "" {
					errs = append(errs, i.Error)
				}
				for _, p := range i.Peers {
					if p.Error != "" {
						errs = append(errs, p.Error)
					}
				}
			}
			if len(errs) != len(tt.wantErrors) {
				t.Fatalf("errors %q, want ones containing %q", errs, tt.wantErrors)
			}
			for i, want := range tt.wantErrors {
				if !strings.Contains(errs[i], want) {
					t.Errorf("error %q does not contain %q", errs[i], want)
				}
			}
		})
	}
}

func TestDerivePeerSettings(t *testing.T) {
	pc := peerConfig("pc", "md5")
	pc.GracefulRestart, pc.RestartTimeSeconds, pc.HoldTimeSeconds, pc.KeepAliveSeconds = true, 30, 9, 3
	in := inputs{
		self:           node("node1", nil, "198.18.0.11"),
		clusterConfigs: []*tables.BGPClusterConfig{clusterConfig("cc", "pc")},
		peerConfigs:    map[string]*tables.BGPPeerConfig{"pc": pc},
		secrets:        map[string]*tables.BGPSecret{"md5": {Name: "md5", HasPassword: true, Password: "s3cret", ResourceVersion: "7"}},
		override: &tables.BGPNodeOverride{Name: "node1", Instances: []tables.BGPInstanceOverride{{
			Name: "main", RouterID: netip.MustParseAddr("198.18.9.9"), LocalPort: 1790,
			LocalAddress: map[string]netip.Addr{"tor": netip.MustParseAddr("198.18.0.11")},
		}}},
		readyHere: func(string) bool { return false },
		served:    func(string) bool { return true },
	}
	instances, _, _ := derive(in)
	if len(instances) != 1 {
		t.Fatalf("instances %v", instances)
	}
	i := instances[0]
	if i.RouterID != netip.MustParseAddr("198.18.9.9") || i.ListenPort != 1790 || i.LocalASN != 65001 || i.Error != "" {
		t.Errorf("instance %+v", i)
	}
	p := i.Peers[0]
	want := tables.BGPPeer{Name: "tor", Address: netip.MustParseAddr("198.18.0.1"), ASN: 65000, LocalAddress: netip.MustParseAddr("198.18.0.11"),
		PeerConfig: "pc", PeerPort: 179, ConnectRetrySeconds: 120, HoldTimeSeconds: 9, KeepAliveSeconds: 3, EBGPMultihop: 1,
		GracefulRestart: true, RestartTimeSeconds: 30, Families: []string{"ipv4-unicast", "ipv6-unicast"}, AuthSecret: "md5",
		Password: "s3cret", PasswordVersion: "7"}
	if !p.Equal(want) {
		t.Errorf("peer\n got %+v\nwant %+v", p, want)
	}
}

// A node's override sets the instance's AS number (Cilium's v2 localASN),
// also where the cluster config has none.
func TestDeriveLocalASNOverride(t *testing.T) {
	for _, c := range []struct {
		name      string
		clusterAS int64
		override  int64
		want      int64
		wantErr   string
	}{
		{"cluster config's", 65001, 0, 65001, ""},
		{"overridden", 65001, 4200000001, 4200000001, ""},
		{"only in the override", 0, 65010, 65010, ""},
		{"nowhere", 0, 0, 0, "localASN is not set, in the CiliumBGPClusterConfig or this node's CiliumBGPNodeConfigOverride"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cc := clusterConfig("cc", "pc")
			cc.Instances[0].LocalASN = c.clusterAS
			in := inputs{
				self:           node("node1", nil, "198.18.0.11"),
				clusterConfigs: []*tables.BGPClusterConfig{cc},
				peerConfigs:    map[string]*tables.BGPPeerConfig{"pc": peerConfig("pc", "")},
				override:       &tables.BGPNodeOverride{Name: "node1", Instances: []tables.BGPInstanceOverride{{Name: "main", LocalASN: c.override}}},
				readyHere:      func(string) bool { return false },
				served:         func(string) bool { return true },
			}
			instances, _, _ := derive(in)
			if len(instances) != 1 || instances[0].LocalASN != c.want || instances[0].Error != c.wantErr {
				t.Fatalf("instances %+v, want AS %d, error %q", instances, c.want, c.wantErr)
			}
		})
	}
}

// A peer found by autoDiscovery is the gateway of the node's default route
// of its family, and has an error while there is none; the cluster
// config's localPort is the instance's, unless the override sets one.
func TestDeriveAutoDiscoveryAndLocalPort(t *testing.T) {
	gw4 := &tables.BGPDefaultGateway{Family: "ipv4", Gateway: netip.MustParseAddr("198.18.44.2"), Device: "eth0"}
	gw6 := &tables.BGPDefaultGateway{Family: "ipv6", Gateway: netip.MustParseAddr("fe80::1").WithZone("eth0"), Device: "eth0"}
	gw6global := &tables.BGPDefaultGateway{Family: "ipv6", Gateway: netip.MustParseAddr("fd00:18:0:44::2"), Device: "eth0"}
	for _, c := range []struct {
		name                                string
		family                              string
		gateways                            []*tables.BGPDefaultGateway
		wantAddr                            string
		wantErr                             string
		clusterPort, overridePort, wantPort int32
	}{
		{name: "ipv4 gateway", family: "ipv4", gateways: []*tables.BGPDefaultGateway{gw4, gw6}, wantAddr: "198.18.44.2", wantPort: -1},
		{name: "ipv6 global gateway", family: "ipv6", gateways: []*tables.BGPDefaultGateway{gw4, gw6global}, wantAddr: "fd00:18:0:44::2", wantPort: -1},
		{name: "ipv6 link-local gateway: not supported, as in Cilium", family: "ipv6", gateways: []*tables.BGPDefaultGateway{gw4, gw6}, wantPort: -1,
			wantErr: "autoDiscovery: the ipv6 default route's gateway fe80::1 (device eth0) is link-local, which autoDiscovery does not support; set peerAddress"},
		{name: "no default route of the family", family: "ipv6", gateways: []*tables.BGPDefaultGateway{gw4},
			wantErr: "autoDiscovery: the node has no ipv6 default route with a gateway", wantPort: -1},
		{name: "neither address nor discovery", family: "", wantErr: "neither peerAddress nor autoDiscovery (mode DefaultGateway or Unnumbered) is set", wantPort: -1},
		{name: "the cluster config's localPort", family: "ipv4", gateways: []*tables.BGPDefaultGateway{gw4}, wantAddr: "198.18.44.2", clusterPort: 1790, wantPort: 1790},
		{name: "the override's localPort wins", family: "ipv4", gateways: []*tables.BGPDefaultGateway{gw4}, wantAddr: "198.18.44.2", clusterPort: 1790, overridePort: 1791, wantPort: 1791},
	} {
		t.Run(c.name, func(t *testing.T) {
			cc := clusterConfig("cc", "pc")
			cc.Instances[0].LocalPort = c.clusterPort
			cc.Instances[0].Peers[0].Address = netip.Addr{}
			cc.Instances[0].Peers[0].DiscoverFamily = c.family
			in := inputs{
				self:           node("node1", nil, "198.18.0.11"),
				clusterConfigs: []*tables.BGPClusterConfig{cc},
				peerConfigs:    map[string]*tables.BGPPeerConfig{"pc": peerConfig("pc", "")},
				override:       &tables.BGPNodeOverride{Name: "node1", Instances: []tables.BGPInstanceOverride{{Name: "main", LocalPort: c.overridePort}}},
				gateways:       map[string]*tables.BGPDefaultGateway{},
				readyHere:      func(string) bool { return false },
				served:         func(string) bool { return true },
			}
			for _, g := range c.gateways {
				in.gateways[g.Family] = g
			}
			instances, _, _ := derive(in)
			if len(instances) != 1 || len(instances[0].Peers) != 1 {
				t.Fatalf("instances %+v", instances)
			}
			p := instances[0].Peers[0]
			addr := ""
			if p.Address.IsValid() {
				addr = p.Address.String()
			}
			if addr != c.wantAddr || p.Error != c.wantErr || instances[0].ListenPort != c.wantPort {
				t.Errorf("peer %s (error %q), port %d; want %s (error %q), port %d", addr, p.Error, instances[0].ListenPort, c.wantAddr, c.wantErr, c.wantPort)
			}
		})
	}
}

// An Interface advertisement announces the named device's addresses, each
// alone and in its family, while the device is up; as Cilium, not IPv6
// link-local, loopback or IPv4-mapped addresses.
func TestDeriveInterface(t *testing.T) {
	addrs := func(ips ...string) []tables.DeviceAddress {
		var out []tables.DeviceAddress
		for _, ip := range ips {
			out = append(out, tables.DeviceAddress{Addr: netip.MustParseAddr(ip)})
		}
		return out
	}
	up := net.FlagUp | net.FlagLoopback
	dev := func(name string, flags net.Flags, oper string, ips ...string) *tables.Device {
		return &tables.Device{Name: name, Flags: flags, OperStatus: oper, Addresses: addrs(ips...)}
	}
	all := []string{"198.18.60.1", "198.18.60.1", "169.254.7.1", "127.0.0.1", "fd00:18:60::1", "fe80::1", "::1", "::ffff:198.18.60.9"}
	for _, c := range []struct {
		name    string
		devices []*tables.Device
		want    []string
	}{
		{"up, unknown operational state (a dummy or loopback)", []*tables.Device{dev("eth0", up, "up", "198.18.0.11"), dev("vips", up, "unknown", all...)},
			[]string{"198.18.60.1/32", "169.254.7.1/32", "fd00:18:60::1/128"}},
		{"operationally up", []*tables.Device{dev("vips", up, "up", "198.18.60.1")}, []string{"198.18.60.1/32"}},
		{"administratively down", []*tables.Device{dev("vips", net.FlagLoopback, "unknown", "198.18.60.1")}, nil},
		{"lower layer down", []*tables.Device{dev("vips", up, "lowerlayerdown", "198.18.60.1")}, nil},
		{"no such device", []*tables.Device{dev("eth0", up, "up", "198.18.0.11")}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := inputs{
				self:           node("node1", nil, "198.18.0.11"),
				clusterConfigs: []*tables.BGPClusterConfig{clusterConfig("cc", "pc")},
				peerConfigs:    map[string]*tables.BGPPeerConfig{"pc": peerConfig("pc", "")},
				adverts:        []*tables.BGPAdvertisement{advert("lo", tables.BGPAdvert{Type: v2alpha1.BGPInterfaceAdvert, Interface: "vips"})},
				devices:        c.devices,
				readyHere:      func(string) bool { return false },
				served:         func(string) bool { return true },
			}
			_, routes, _ := derive(in)
			var got []string
			for _, r := range routes {
				if r.Reasons[0] != "interface vips (advertisement lo)" {
					t.Errorf("route %s: reasons %q", r.Prefix, r.Reasons)
				}
				got = append(got, r.Prefix.String())
			}
			slices.Sort(got)
			want := slices.Clone(c.want)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("routes %v, want %v", got, want)
			}
		})
	}
}

// transport.sourceInterface: the session starts from the interface's one
// usable address of the peer's family; the kernel picks when there is no
// such interface or address, or several; the node's override wins.
func TestDerivePeerSourceInterface(t *testing.T) {
	dev := func(ips ...string) *tables.Device {
		d := &tables.Device{Name: "src", Flags: net.FlagUp, OperStatus: "unknown"}
		for _, ip := range ips {
			d.Addresses = append(d.Addresses, tables.DeviceAddress{Addr: netip.MustParseAddr(ip)})
		}
		return d
	}
	for _, c := range []struct {
		name     string
		peer     string
		devices  []*tables.Device
		override string
		want     string
	}{
		{"one IPv4 address", "198.18.0.1", []*tables.Device{dev("198.18.62.1", "fd00:18:62::1", "fe80::1")}, "", "198.18.62.1"},
		{"an IPv6 peer: the global IPv6 address", "fd00:18::1", []*tables.Device{dev("198.18.62.1", "fe80::1", "fd00:18:62::1")}, "", "fd00:18:62::1"},
		{"loopback and multicast do not count", "198.18.0.1", []*tables.Device{dev("127.0.0.2", "198.18.62.1", "224.0.0.5")}, "", "198.18.62.1"},
		{"two IPv4 addresses: the kernel picks", "198.18.0.1", []*tables.Device{dev("198.18.62.1", "198.18.62.2")}, "", ""},
		{"no address of the family", "fd00:18::1", []*tables.Device{dev("198.18.62.1", "fe80::1")}, "", ""},
		{"no such interface", "198.18.0.1", nil, "", ""},
		{"the override's localAddress wins", "198.18.0.1", []*tables.Device{dev("198.18.62.1")}, "198.18.0.11", "198.18.0.11"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cc := clusterConfig("cc", "pc")
			cc.Instances[0].Peers[0].Address = netip.MustParseAddr(c.peer)
			pc := peerConfig("pc", "")
			pc.SourceInterface = "src"
			ov := &tables.BGPNodeOverride{Name: "node1", Instances: []tables.BGPInstanceOverride{{Name: "main"}}}
			if c.override != "" {
				ov.Instances[0].LocalAddress = map[string]netip.Addr{"tor": netip.MustParseAddr(c.override)}
			}
			in := inputs{
				self:           node("node1", nil, "198.18.0.11"),
				clusterConfigs: []*tables.BGPClusterConfig{cc},
				peerConfigs:    map[string]*tables.BGPPeerConfig{"pc": pc},
				override:       ov,
				devices:        c.devices,
				readyHere:      func(string) bool { return false },
				served:         func(string) bool { return true },
			}
			instances, _, _ := derive(in)
			if len(instances) != 1 || len(instances[0].Peers) != 1 {
				t.Fatalf("instances %+v", instances)
			}
			got := ""
			if a := instances[0].Peers[0].LocalAddress; a.IsValid() {
				got = a.String()
			}
			if got != c.want {
				t.Errorf("local address %q, want %q", got, c.want)
			}
		})
	}
}
