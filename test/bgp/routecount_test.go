package bgp

import (
	"fmt"
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The routes a node reports as advertised to a peer (CiliumBGPNodeConfig
// routeCount, the same numbers as bgp-peers and herald_bgp_routes_advertised)
// are the prefixes the router accepted from it. The shared peer configs
// have graceful restart on, for which GoBGP counts its End-of-RIB marker
// as one more path: the count was one too many per family.
func TestRouteCountMatchesRouter(t *testing.T) {
	ensureAgents(t)
	ns := newNamespace(t)
	createService(t, ns, "count4", singleStack(corev1.IPv4Protocol))
	createService(t, ns, "count6", singleStack(corev1.IPv6Protocol))
	for _, vip := range []netip.Addr{waitVIP(t, ns, "count4"), waitVIP(t, ns, "count6")} {
		waitAdvertisedBy(t, hostPrefix(vip), nodes...)
	}
	for _, n := range nodes {
		waitFor(t, n.Name+"'s route counts as the router's", func() (bool, string) {
			return routeCountsMatch(t, n)
		})
	}
}

// routeCountsMatch compares the node's reported advertised counts of
// tor4 (ipv4) and tor6 (ipv6) with what FRR accepted from the node.
func routeCountsMatch(t *testing.T, n *node) (bool, string) {
	nc, err := herald.CiliumV2alpha1().CiliumBGPNodeConfigs().Get(ctxT(t), n.Name, metav1.GetOptions{})
	if err != nil {
		return false, err.Error()
	}
	nbrs, err := router.Neighbors()
	if err != nil {
		return false, err.Error()
	}
	want := map[string]struct{ addr, afi, frrAF string }{
		"tor4": {n.host.IP.String(), "ipv4", "ipv4Unicast"},
		"tor6": {n.host.IP6.String(), "ipv6", "ipv6Unicast"},
	}
	checked := 0
	for _, inst := range nc.Status.BGPInstances {
		for _, ps := range inst.PeerStatuses {
			w, ok := want[ps.Name]
			if !ok {
				continue
			}
			accepted := nbrs[w.addr].AcceptedPrefixes[w.frrAF]
			for _, rc := range ps.RouteCount {
				if rc.Afi != w.afi {
					continue
				}
				got := ptr.Deref(rc.Advertised, -1)
				if accepted == 0 || int(got) != accepted {
					return false, fmt.Sprintf("peer %s %s: reports %d advertised, FRR accepted %d", ps.Name, w.afi, got, accepted)
				}
				checked++
			}
		}
	}
	return checked == 2, fmt.Sprintf("%d of 2 route counts found in the status", checked)
}
