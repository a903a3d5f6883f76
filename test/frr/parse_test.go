package frr

import (
	"net/netip"
	"os"
	"slices"
	"testing"
)

// The testdata files are FRR 8.4.4's and iproute2's own output.

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Captured from r1 of a run like TestECMP's (r2 and r3 announcing, r3
// with communities and a large community, r1 setting local-pref 150 on
// r3's IPv4 paths), after r2's bgpd was killed (graceful restart).
func TestParseRIB(t *testing.T) {
	rib, err := parseRIB(readTestdata(t, "rib-ipv4.json"))
	if err != nil {
		t.Fatal(err)
	}
	paths := rib[netip.MustParsePrefix("198.18.41.0/24")]
	if len(rib) != 1 || len(paths) != 2 {
		t.Fatalf("RIB %+v", rib)
	}
	p := paths[0]
	if p.NextHop != netip.MustParseAddr("198.18.40.12") || p.NextHopLinkLocal.IsValid() ||
		!p.Valid || p.Best || p.Multipath || !p.Stale || p.LocalPref != 0 || p.ASPath != "65002" ||
		p.Origin != "IGP" || p.PeerID != "198.18.40.12" || p.Peer() != netip.MustParseAddr("198.18.40.12") ||
		!slices.Equal(p.Communities, []string{"65002:100"}) || p.LargeCommunities != nil {
		t.Errorf("path 0 = %+v", p)
	}
	p = paths[1]
	if p.NextHop != netip.MustParseAddr("198.18.40.13") || !p.Best || p.Multipath || p.Stale ||
		p.LocalPref != 150 || p.PeerID != "198.18.40.13" || p.PeerRouterID != "198.18.40.13" ||
		!slices.Equal(p.Communities, []string{"65003:100", "no-export"}) ||
		!slices.Equal(p.LargeCommunities, []string{"65003:1:2"}) {
		t.Errorf("path 1 = %+v", p)
	}

	rib, err = parseRIB(readTestdata(t, "rib-ipv6.json"))
	if err != nil {
		t.Fatal(err)
	}
	paths = rib[netip.MustParsePrefix("fd00:18:0:41::/64")]
	if len(paths) != 2 {
		t.Fatalf("RIB %+v", rib)
	}
	p = paths[0]
	if p.NextHop != netip.MustParseAddr("fd00:18:0:40::c") || p.NextHopLinkLocal != netip.MustParseAddr("fe80::48:4cff:fe00:280c") ||
		p.Best || !p.Multipath || !p.Stale || p.PeerID != "fd00:18:0:40::c" {
		t.Errorf("IPv6 path 0 = %+v", p)
	}
	p = paths[1]
	if p.NextHop != netip.MustParseAddr("fd00:18:0:40::d") || p.NextHopLinkLocal != netip.MustParseAddr("fe80::48:4cff:fe00:280d") ||
		!p.Best || !p.Multipath || p.Stale {
		t.Errorf("IPv6 path 1 = %+v", p)
	}
}

func TestParseNeighbors(t *testing.T) {
	ns, err := parseNeighbors(readTestdata(t, "neighbors.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ns) != 4 {
		t.Fatalf("neighbors %+v", ns)
	}
	// r2, its bgpd killed: no capabilities while the session is down.
	n := ns["198.18.40.12"]
	if n.State != "Idle" || n.RemoteAS != 65002 || n.LocalAS != 65001 || n.LastReset != "NSF peer closed the session" ||
		n.GracefulRestart || n.RemoteGRMode != "NotApplicable" || n.ConnectionsEstablished != 1 || n.ConnectionsDropped != 1 {
		t.Errorf("neighbor 198.18.40.12 = %+v", n)
	}
	n = ns["fd00:18:0:40::d"]
	if n.State != "Established" || n.RemoteAS != 65003 || n.RemoteRouterID != "198.18.40.13" || n.Hostname != "r3" ||
		!n.GracefulRestart || n.RemoteGRMode != "Restart" || n.ConnectionsEstablished != 1 ||
		n.AcceptedPrefixes["ipv6Unicast"] != 1 || n.LastNotification != "" {
		t.Errorf("neighbor fd00:18:0:40::d = %+v", n)
	}
}

func TestParseKernelRoutes(t *testing.T) {
	rs, err := parseKernelRoutes(readTestdata(t, "routes-ipv4.json"), "ipv4")
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 {
		t.Fatalf("routes %+v", rs)
	}
	if r := rs[0]; r.Dst != netip.MustParsePrefix("198.18.40.0/24") || r.Protocol != "kernel" || r.Type != "unicast" ||
		len(r.NextHops) != 1 || r.NextHops[0].Gateway.IsValid() || r.NextHops[0].Dev != "eth0" {
		t.Errorf("connected route = %+v", r)
	}
	if r := rs[1]; r.Dst != netip.MustParsePrefix("198.18.41.0/24") || r.Protocol != "bgp" || len(r.NextHops) != 2 ||
		r.NextHops[0].Gateway != netip.MustParseAddr("198.18.40.13") || r.NextHops[1].Gateway != netip.MustParseAddr("198.18.40.12") {
		t.Errorf("ECMP route = %+v", r)
	}
	if r := rs[2]; r.Type != "blackhole" || len(r.NextHops) != 0 {
		t.Errorf("blackhole route = %+v", r)
	}
	if r := rs[3]; r.Dst != netip.MustParsePrefix("198.18.42.7/32") || len(r.NextHops) != 1 || r.NextHops[0].Dev != "lo" {
		t.Errorf("host route = %+v", r)
	}

	rs, err = parseKernelRoutes(readTestdata(t, "routes-ipv6.json"), "ipv6")
	if err != nil {
		t.Fatal(err)
	}
	if r := rs[1]; len(rs) != 3 || r.Dst != netip.MustParsePrefix("fd00:18:0:41::/64") || len(r.NextHops) != 2 ||
		r.NextHops[0].Gateway != netip.MustParseAddr("fe80::48:4cff:fe00:280d") || r.NextHops[1].Gateway != netip.MustParseAddr("fe80::48:4cff:fe00:280c") {
		t.Errorf("routes %+v", rs)
	}

	for s, want := range map[string]string{"default": "0.0.0.0/0", "198.18.42.7": "198.18.42.7/32"} {
		if p, err := parseDst(s, "ipv4"); err != nil || p.String() != want {
			t.Errorf("parseDst(%q) = %v, %v", s, p, err)
		}
	}
	if p, err := parseDst("default", "ipv6"); err != nil || p.String() != "::/0" {
		t.Errorf("parseDst(default, ipv6) = %v, %v", p, err)
	}
}
