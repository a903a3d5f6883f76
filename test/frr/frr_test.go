package frr

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldlb/herald/test/netlab"
)

// timeout bounds every wait: generous, the tests check outcomes, not
// durations.
const timeout = 60 * time.Second

// The prefixes the routers announce (blackhole routes in their namespace,
// picked up by `network` statements).
var (
	announced  = netip.MustParsePrefix("198.18.37.0/24")
	announced6 = netip.MustParsePrefix("fd00:18:0:37::/64")
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

func startRouter(t *testing.T, h *netlab.Host, config string) *Router {
	t.Helper()
	return StartT(t, Options{
		Netns:  h.Netns,
		Dir:    filepath.Join(t.TempDir(), h.Name),
		Name:   h.Name,
		Config: config,
	})
}

// blackhole adds blackhole routes to the prefixes in the host's
// namespace: something for a `network` statement to announce.
func blackhole(t *testing.T, h *netlab.Host, pfxs ...netip.Prefix) {
	t.Helper()
	for _, p := range pfxs {
		if out, err := exec.Command("ip", "-n", h.Netns, "route", "add", "blackhole", p.String()).CombinedOutput(); err != nil {
			t.Fatalf("ip route add blackhole %s in %s: %v: %s", p, h.Netns, err, out)
		}
	}
}

// announcerConfig is the config of a router in AS asn that peers over IPv4
// and IPv6 with upstream and announces announced and announced6. extra
// goes into `router bgp`; neighborExtra is added per neighbor, with %s for
// the neighbor's address.
func announcerConfig(asn int, h, upstream *netlab.Host, extra, neighborExtra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "router bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n timers bgp 3 9\n", asn, h.IP)
	b.WriteString(extra)
	for _, a := range []netip.Addr{upstream.IP, upstream.IP6} {
		fmt.Fprintf(&b, " neighbor %s remote-as external\n neighbor %s timers connect 2\n", a, a)
		if neighborExtra != "" {
			fmt.Fprintf(&b, neighborExtra, a)
		}
	}
	fmt.Fprintf(&b, " address-family ipv4 unicast\n  neighbor %s activate\n  neighbor %s route-map OUT out\n  network %s\n exit-address-family\n", upstream.IP, upstream.IP, announced)
	fmt.Fprintf(&b, " address-family ipv6 unicast\n  neighbor %s activate\n  neighbor %s route-map OUT out\n  network %s\n exit-address-family\n", upstream.IP6, upstream.IP6, announced6)
	fmt.Fprintf(&b, "exit\nroute-map OUT permit 10\n set community %d:100\nexit\n", asn)
	return b.String()
}

// receiverConfig is the config of r1 (AS 65001), peering with the given
// hosts over IPv4 and IPv6, with ECMP over up to 8 paths.
func receiverConfig(h *netlab.Host, extra, neighborExtra string, peers ...*netlab.Host) string {
	var b strings.Builder
	fmt.Fprintf(&b, "router bgp 65001\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n timers bgp 3 9\n bgp bestpath as-path multipath-relax\n", h.IP)
	b.WriteString(extra)
	for _, p := range peers {
		for _, a := range []netip.Addr{p.IP, p.IP6} {
			fmt.Fprintf(&b, " neighbor %s remote-as external\n neighbor %s timers connect 2\n", a, a)
			if neighborExtra != "" {
				fmt.Fprintf(&b, neighborExtra, a)
			}
		}
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n")
	for _, p := range peers {
		fmt.Fprintf(&b, "  neighbor %s activate\n", p.IP)
	}
	b.WriteString(" exit-address-family\n address-family ipv6 unicast\n  maximum-paths 8\n")
	for _, p := range peers {
		fmt.Fprintf(&b, "  neighbor %s activate\n", p.IP6)
	}
	b.WriteString(" exit-address-family\nexit\n")
	return b.String()
}

func addrs(hs ...*netlab.Host) []string {
	var s []string
	for _, h := range hs {
		s = append(s, h.IP.String(), h.IP6.String())
	}
	return s
}

// pathFrom returns the path of pfx learnt from peer.
func pathFrom(rib map[netip.Prefix][]Path, pfx netip.Prefix, peer netip.Addr) (Path, bool) {
	for _, p := range rib[pfx] {
		if p.Peer() == peer {
			return p, true
		}
	}
	return Path{}, false
}

func TestEBGP(t *testing.T) {
	requireRoot(t)
	lan := newLAN(t, "r1", "r2")
	r1h, r2h := lan.Host("r1"), lan.Host("r2")
	blackhole(t, r2h, announced, announced6)
	r1 := startRouter(t, r1h, receiverConfig(r1h, "", "", r2h))
	r2 := startRouter(t, r2h, announcerConfig(65002, r2h, r1h, "", ""))
	ctx := ctxT(t)

	ns, err := r1.WaitEstablished(ctx, addrs(r2h)...)
	if err != nil {
		t.Fatalf("sessions not established: %v; neighbors %+v", err, ns)
	}
	n := ns[r2h.IP.String()]
	if n.RemoteAS != 65002 || n.LocalAS != 65001 || n.RemoteRouterID != r2h.IP.String() || n.Hostname != "r2" {
		t.Errorf("neighbor %s = %+v", r2h.IP, n)
	}
	if _, err := r2.WaitEstablished(ctx, addrs(r1h)...); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		afi     string
		pfx     netip.Prefix
		peer    netip.Addr
		nexthop netip.Addr
	}{
		{"ipv4", announced, r2h.IP, r2h.IP},
		{"ipv6", announced6, r2h.IP6, r2h.IP6},
	} {
		// Wait for the best path, not for the first sight: bgpd selects
		// the best path in a work queue after the UPDATE is in its table.
		rib, err := r1.WaitRIB(ctx, tc.afi, func(rib map[netip.Prefix][]Path) bool {
			return len(rib[tc.pfx]) > 0 && rib[tc.pfx][0].Best
		})
		if err != nil {
			t.Fatalf("%s: %s not in r1's RIB: %v; RIB %+v", tc.afi, tc.pfx, err, rib)
		}
		p, ok := pathFrom(rib, tc.pfx, tc.peer)
		if !ok || len(rib[tc.pfx]) != 1 {
			t.Fatalf("%s: paths of %s: %+v", tc.afi, tc.pfx, rib[tc.pfx])
		}
		if p.NextHop != tc.nexthop || !p.Valid || !p.Best || p.Stale || p.Multipath || p.ASPath != "65002" || p.Origin != "IGP" {
			t.Errorf("%s: path of %s = %+v", tc.afi, tc.pfx, p)
		}
		if !slices.Equal(p.Communities, []string{"65002:100"}) {
			t.Errorf("%s: communities of %s = %q", tc.afi, tc.pfx, p.Communities)
		}
		if tc.afi == "ipv6" && !p.NextHopLinkLocal.IsLinkLocalUnicast() {
			t.Errorf("ipv6: no link-local next hop in %+v", p)
		}

		// zebra installed it: via r2's address (IPv6: its link-local one).
		gw := p.NextHop
		if tc.afi == "ipv6" {
			gw = p.NextHopLinkLocal
		}
		routes, err := r1.WaitKernelRoutes(ctx, tc.afi, func(rs []KernelRoute) bool {
			i := slices.IndexFunc(rs, func(kr KernelRoute) bool { return kr.Dst == tc.pfx })
			return i >= 0 && rs[i].Protocol == "bgp" && len(rs[i].NextHops) == 1 && rs[i].NextHops[0].Gateway == gw
		})
		if err != nil {
			t.Fatalf("%s: no kernel route to %s via %s in r1: %v; routes %+v", tc.afi, tc.pfx, gw, err, routes)
		}
		// The kernel routes traffic to the prefix through r2 (a lookup,
		// nothing is sent).
		out, err := exec.Command("ip", "-n", r1h.Netns, "route", "get", tc.pfx.Addr().Next().String()).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "via "+gw.String()) {
			t.Errorf("%s: ip route get in r1: %v: %s", tc.afi, err, out)
		}
	}

	// Reconfigured at run time: r1 sees the new community.
	if err := r2.Configure("route-map OUT permit 10", "set community 65002:200"); err != nil {
		t.Fatal(err)
	}
	if out, err := r2.Vtysh("clear bgp * soft out"); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rib, err := r1.WaitRIB(ctx, "ipv4", func(rib map[netip.Prefix][]Path) bool {
		return len(rib[announced]) == 1 && slices.Equal(rib[announced][0].Communities, []string{"65002:200"})
	}); err != nil {
		t.Fatalf("new community not seen: %v; paths %+v", err, rib[announced])
	}
	if err := r1.Configure("router bgp 65001", "no-such-command"); err == nil {
		t.Error("Configure with an unknown command: no error")
	}
	if _, err := r1.Vtysh("show no-such-thing"); err == nil {
		t.Error("Vtysh with an unknown command: no error")
	}
}

// md5Failures reads the kernel's count of TCP segments dropped for a bad
// TCP-MD5 signature in the namespace.
func md5Failures(t *testing.T, h *netlab.Host) int {
	t.Helper()
	n, err := h.TCPStat("TCPMD5Failure")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestMD5 peers r1 with r2 and r3 over IPv4 and IPv6 with TCP-MD5: r3
// knows the password, r2 has another one. r3's sessions come up, r2's do
// not, and the kernel counts the segments it dropped.
func TestMD5(t *testing.T) {
	requireRoot(t)
	lan := newLAN(t, "r1", "r2", "r3")
	r1h, r2h, r3h := lan.Host("r1"), lan.Host("r2"), lan.Host("r3")
	blackhole(t, r3h, announced, announced6)
	r1 := startRouter(t, r1h, receiverConfig(r1h, "", " neighbor %s password herald-md5-secret\n", r2h, r3h))
	startRouter(t, r2h, announcerConfig(65002, r2h, r1h, "", " neighbor %s password not-the-secret\n"))
	startRouter(t, r3h, announcerConfig(65003, r3h, r1h, "", " neighbor %s password herald-md5-secret\n"))
	ctx := ctxT(t)

	if ns, err := r1.WaitEstablished(ctx, addrs(r3h)...); err != nil {
		t.Fatalf("sessions with the right password not established: %v; neighbors %+v", err, ns)
	}
	if rib, err := r1.WaitRIB(ctx, "ipv4", func(rib map[netip.Prefix][]Path) bool { return len(rib[announced]) > 0 }); err != nil {
		t.Fatalf("%s not learnt over an MD5 session: %v; RIB %+v", announced, err, rib)
	}
	// Both ends drop the other's segments: wait until both counted some,
	// for each address family's session (at least one each way).
	if err := Wait(ctx, func() (bool, error) { return md5Failures(t, r1h) >= 2 && md5Failures(t, r2h) >= 2, nil }); err != nil {
		t.Fatalf("the kernel counted no TCP-MD5 failures: %v (r1 %d, r2 %d)", err, md5Failures(t, r1h), md5Failures(t, r2h))
	}
	ns, err := r1.Neighbors()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs(r2h) {
		n, ok := ns[a]
		if !ok {
			t.Fatalf("no neighbor %s in %+v", a, ns)
		}
		if n.State == "Established" || n.ConnectionsEstablished != 0 || n.RemoteAS != 0 {
			t.Errorf("neighbor %s with the wrong password: %+v", a, n)
		}
		t.Logf("neighbor %s with the wrong password: state %s, last reset %q", a, n.State, n.LastReset)
	}
}

// TestGracefulRestart kills r2's bgpd: r1 keeps r2's routes, stale, in
// its table and in the kernel until r2 is back; then once more without
// coming back, and the routes go when r2's restart time (5s) ends.
func TestGracefulRestart(t *testing.T) {
	requireRoot(t)
	lan := newLAN(t, "r1", "r2")
	r1h, r2h := lan.Host("r1"), lan.Host("r2")
	blackhole(t, r2h, announced, announced6)
	gr := " bgp graceful-restart\n bgp graceful-restart restart-time 5\n"
	r1 := startRouter(t, r1h, receiverConfig(r1h, gr, "", r2h))
	r2 := startRouter(t, r2h, announcerConfig(65002, r2h, r1h, gr, ""))
	ctx := ctxT(t)

	ns, err := r1.WaitEstablished(ctx, addrs(r2h)...)
	if err != nil {
		t.Fatalf("sessions not established: %v; neighbors %+v", err, ns)
	}
	for _, a := range addrs(r2h) {
		if !ns[a].GracefulRestart {
			t.Errorf("graceful restart not negotiated with %s: %+v", a, ns[a])
		}
	}
	ribs := map[string]netip.Prefix{"ipv4": announced, "ipv6": announced6}
	waitPaths := func(what string, cond func(p Path) bool) {
		t.Helper()
		for afi, pfx := range ribs {
			rib, err := r1.WaitRIB(ctx, afi, func(rib map[netip.Prefix][]Path) bool {
				return len(rib[pfx]) == 1 && cond(rib[pfx][0])
			})
			if err != nil {
				t.Fatalf("%s: %s: %v; paths %+v", what, pfx, err, rib[pfx])
			}
		}
	}
	waitPaths("before the restart", func(p Path) bool { return p.Valid && !p.Stale })

	if err := r2.KillBGPD(); err != nil {
		t.Fatal(err)
	}
	waitPaths("bgpd killed", func(p Path) bool { return p.Stale && p.Valid && p.Best })
	if ns, err := r1.Neighbors(); err != nil {
		t.Fatal(err)
	} else if n := ns[r2h.IP.String()]; n.State == "Established" {
		t.Errorf("neighbor %s still established after its bgpd died: %+v", r2h.IP, n)
	} else {
		t.Logf("neighbor %s after its bgpd died: state %s, last reset %q", r2h.IP, n.State, n.LastReset)
	}
	// The stale routes stay in the kernel.
	for afi, pfx := range ribs {
		routes, err := r1.KernelRoutes(afi)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(routes, func(kr KernelRoute) bool { return kr.Dst == pfx && kr.Protocol == "bgp" }) {
			t.Errorf("stale route to %s not in r1's kernel table: %+v", pfx, routes)
		}
	}

	if err := r2.StartBGPD(); err != nil {
		t.Fatal(err)
	}
	if ns, err := r1.WaitEstablished(ctx, addrs(r2h)...); err != nil {
		t.Fatalf("sessions not re-established: %v; neighbors %+v", err, ns)
	}
	waitPaths("bgpd back", func(p Path) bool { return p.Valid && !p.Stale })

	// Killed for good: stale, then gone after the restart time.
	if err := r2.KillBGPD(); err != nil {
		t.Fatal(err)
	}
	waitPaths("bgpd killed again", func(p Path) bool { return p.Stale })
	for afi, pfx := range ribs {
		rib, err := r1.WaitRIB(ctx, afi, func(rib map[netip.Prefix][]Path) bool { return len(rib[pfx]) == 0 })
		if err != nil {
			t.Fatalf("%s still there after the restart time: %v; paths %+v", pfx, err, rib[pfx])
		}
		if routes, err := r1.WaitKernelRoutes(ctx, afi, func(rs []KernelRoute) bool {
			return !slices.ContainsFunc(rs, func(kr KernelRoute) bool { return kr.Dst == pfx })
		}); err != nil {
			t.Fatalf("kernel route to %s still there: %v; routes %+v", pfx, err, routes)
		}
	}
}

// TestECMP has r2 and r3 announce the same prefixes to r1, which listens
// for them with `bgp listen range` (dynamic neighbors) and keeps both
// paths: both multipath, two next hops in the kernel route.
func TestECMP(t *testing.T) {
	requireRoot(t)
	lan := newLAN(t, "r1", "r2", "r3")
	r1h, r2h, r3h := lan.Host("r1"), lan.Host("r2"), lan.Host("r3")
	blackhole(t, r2h, announced, announced6)
	blackhole(t, r3h, announced, announced6)
	r1 := startRouter(t, r1h, fmt.Sprintf(`router bgp 65001
 bgp router-id %s
 no bgp ebgp-requires-policy
 no bgp default ipv4-unicast
 bgp bestpath as-path multipath-relax
 neighbor PEERS peer-group
 neighbor PEERS remote-as external
 neighbor PEERS6 peer-group
 neighbor PEERS6 remote-as external
 bgp listen range %s peer-group PEERS
 bgp listen range %s peer-group PEERS6
 address-family ipv4 unicast
  neighbor PEERS activate
  maximum-paths 8
 exit-address-family
 address-family ipv6 unicast
  neighbor PEERS6 activate
  maximum-paths 8
 exit-address-family
exit
`, r1h.IP, subnet, subnet6))
	startRouter(t, r2h, announcerConfig(65002, r2h, r1h, "", ""))
	startRouter(t, r3h, announcerConfig(65003, r3h, r1h, "", ""))
	ctx := ctxT(t)

	if ns, err := r1.WaitEstablished(ctx, addrs(r2h, r3h)...); err != nil {
		t.Fatalf("dynamic neighbors not established: %v; neighbors %+v", err, ns)
	}
	for _, tc := range []struct {
		afi      string
		pfx      netip.Prefix
		nexthops []netip.Addr
	}{
		{"ipv4", announced, []netip.Addr{r2h.IP, r3h.IP}},
		{"ipv6", announced6, []netip.Addr{r2h.IP6, r3h.IP6}},
	} {
		rib, err := r1.WaitRIB(ctx, tc.afi, func(rib map[netip.Prefix][]Path) bool {
			ps := rib[tc.pfx]
			return len(ps) == 2 && ps[0].Multipath && ps[1].Multipath
		})
		if err != nil {
			t.Fatalf("%s: not two multipaths to %s: %v; paths %+v", tc.afi, tc.pfx, err, rib[tc.pfx])
		}
		var nhs, gws []netip.Addr
		best := 0
		for _, p := range rib[tc.pfx] {
			nhs = append(nhs, p.NextHop)
			gw := p.NextHop
			if tc.afi == "ipv6" {
				gw = p.NextHopLinkLocal
			}
			gws = append(gws, gw)
			if p.Best {
				best++
			}
		}
		slices.SortFunc(nhs, netip.Addr.Compare)
		slices.SortFunc(gws, netip.Addr.Compare)
		if !slices.Equal(nhs, tc.nexthops) || best != 1 {
			t.Errorf("%s: paths of %s: %+v", tc.afi, tc.pfx, rib[tc.pfx])
		}
		routes, err := r1.WaitKernelRoutes(ctx, tc.afi, func(rs []KernelRoute) bool {
			i := slices.IndexFunc(rs, func(kr KernelRoute) bool { return kr.Dst == tc.pfx })
			if i < 0 || len(rs[i].NextHops) != 2 {
				return false
			}
			var got []netip.Addr
			for _, nh := range rs[i].NextHops {
				got = append(got, nh.Gateway)
			}
			slices.SortFunc(got, netip.Addr.Compare)
			return slices.Equal(got, gws)
		})
		if err != nil {
			t.Fatalf("%s: no ECMP kernel route to %s via %v: %v; routes %+v", tc.afi, tc.pfx, gws, err, routes)
		}
	}
}

// TestWrongAS has r2 expect another AS from r1: r2 refuses r1's OPEN with
// a NOTIFICATION, which r1's neighbor shows. (Not necessarily on the first
// try: when both connect at once, r1 may end the attempt with a
// notification of its own, "Receive Unexpected Message in OpenSent
// State"; the next attempt comes 2s later.)
func TestWrongAS(t *testing.T) {
	requireRoot(t)
	lan := newLAN(t, "r1", "r2")
	r1h, r2h := lan.Host("r1"), lan.Host("r2")
	r1 := startRouter(t, r1h, receiverConfig(r1h, "", "", r2h))
	startRouter(t, r2h, strings.ReplaceAll(announcerConfig(65002, r2h, r1h, "", ""), "remote-as external", "remote-as 65009"))
	ctx := ctxT(t)

	ns, err := r1.WaitNeighbors(ctx, func(ns map[string]Neighbor) bool {
		return strings.Contains(ns[r2h.IP.String()].LastNotification, "Bad Peer AS")
	})
	if err != nil {
		t.Fatalf("no notification from r2: %v; neighbors %+v", err, ns)
	}
	n := ns[r2h.IP.String()]
	t.Logf("neighbor %s: %+v", r2h.IP, n)
	if n.State == "Established" || n.ConnectionsEstablished != 0 || n.LastReset != "BGP Notification received" {
		t.Errorf("neighbor %s = %+v", r2h.IP, n)
	}
}
