package bgp

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
)

// A LoadBalancer IP is advertised by every node, FRR installs it with one
// next hop per node (ECMP), with the advertisement's communities; it is
// withdrawn when the Service goes.
func TestLoadBalancerIP(t *testing.T) {
	ensureAgents(t)
	ns := newNamespace(t)
	createService(t, ns, "web", singleStack(corev1.IPv4Protocol))
	vip := waitVIP(t, ns, "web")
	p := hostPrefix(vip)

	paths := waitAdvertisedBy(t, p, nodes...)
	for _, path := range paths {
		if !slices.Contains(path.Communities, "65001:100") || !slices.Contains(path.LargeCommunities, "65001:1:2") {
			t.Errorf("path %+v lacks the advertisement's communities", path)
		}
	}
	waitKernelECMP(t, p, nodes...)

	// The agent says what it advertises and why.
	routes := dbgTable[tables.BGPRoute](t, nodes[0], tables.BGPRoutesTableName)
	found := false
	for _, r := range routes {
		if r.Prefix == p && r.Peer == "tor4" && slices.ContainsFunc(r.Reasons, func(s string) bool { return strings.Contains(s, "Service "+ns+"/web LoadBalancerIP") }) {
			found = true
		}
	}
	if !found {
		t.Errorf("bgp-routes of node1 has no row for %s to tor4 with the Service as reason: %+v", p, routes)
	}
	out, err := nodes[0].Dbg("explain", "service", ns+"/web")
	if err != nil || !strings.Contains(string(out), "BGP: "+p.String()+" to peer tor4") {
		t.Errorf("herald-dbg explain service: %v\n%s", err, out)
	}
	// And its metrics: the session is up, routes and UPDATEs went out.
	waitFor(t, "node1's metrics of its session with tor4", func() (bool, string) {
		m, err := nodes[0].Metrics()
		if err != nil {
			return false, err.Error()
		}
		peer := map[string]string{"peer": "tor4"}
		up, _ := m.Value("herald_bgp_session_up", peer)
		adv, _ := m.Value("herald_bgp_routes_advertised", map[string]string{"peer": "tor4", "afi": "ipv4", "safi": "unicast"})
		sent, _ := m.Value("herald_bgp_updates_sent_total", peer)
		uptime, _ := m.Value("herald_bgp_session_uptime_seconds", peer)
		return up == 1 && adv >= 1 && sent >= 1 && uptime > 0,
			fmt.Sprintf("session_up %v, routes_advertised %v, updates_sent_total %v, uptime %v", up, adv, sent, uptime)
	})

	// New attributes reach the router (a soft reset of each session, no
	// withdrawal).
	setAdvertCommunity(t, "65001:200")
	t.Cleanup(func() { setAdvertCommunity(t, "65001:100") })
	waitFor(t, "the new community on every path", func() (bool, string) {
		paths, err := pathsOf(p)
		if err != nil || len(paths) != len(nodes) {
			return false, fmt.Sprint(err, describe(paths))
		}
		for _, path := range paths {
			if !slices.Equal(path.Communities, []string{"65001:200"}) {
				return false, fmt.Sprintf("%+v", path)
			}
		}
		return true, ""
	})

	if err := kube.CoreV1().Services(ns).Delete(ctxT(t), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWithdrawn(t, p)
}

// setAdvertCommunity changes the shared advertisement's standard community.
func setAdvertCommunity(t *testing.T, c string) {
	t.Helper()
	api := herald.CiliumV2alpha1().CiliumBGPAdvertisements()
	adv, err := api.Get(ctxT(t), advertName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	adv.Spec.Advertisements[0].Attributes.Communities.Standard = []v2alpha1.BGPStandardCommunity{v2alpha1.BGPStandardCommunity(c)}
	if _, err := api.Update(ctxT(t), adv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// An IPv6 LoadBalancer IP goes as a /128 over the IPv6 sessions.
func TestIPv6LoadBalancerIP(t *testing.T) {
	ensureAgents(t)
	ns := newNamespace(t)
	createService(t, ns, "web6", singleStack(corev1.IPv6Protocol))
	vip := waitVIP(t, ns, "web6")
	if !vip.Is6() {
		t.Fatalf("VIP %s is not IPv6", vip)
	}
	waitAdvertisedBy(t, hostPrefix(vip), nodes...)
	waitKernelECMP(t, hostPrefix(vip), nodes...)
}

// aggregationLengthIPv4/IPv6: Services in one /24 (/120) reach the router
// as that one prefix, from every node, and not as their own /32s; the
// prefix goes when the last of them does.
func TestAggregation(t *testing.T) {
	ensureAgents(t)
	ns := newNamespace(t)
	// Two addresses of one /24 of the pool, asked for by name.
	aggregate := func(family corev1.IPFamily, ip string) func(*corev1.Service) {
		return func(s *corev1.Service) {
			singleStack(family)(s)
			s.Labels[serviceLabel] = "aggregate"
			if ip != "" {
				s.Annotations = map[string]string{"lbipam.cilium.io/ips": ip}
			}
		}
	}
	createService(t, ns, "agg1", aggregate(corev1.IPv4Protocol, "198.18.59.201"))
	createService(t, ns, "agg2", aggregate(corev1.IPv4Protocol, "198.18.59.202"))
	createService(t, ns, "agg6", aggregate(corev1.IPv6Protocol, ""))
	vip1, vip2, vip6 := waitVIP(t, ns, "agg1"), waitVIP(t, ns, "agg2"), waitVIP(t, ns, "agg6")
	p4, p6 := netip.MustParsePrefix("198.18.59.0/24"), netip.PrefixFrom(vip6, 120).Masked()
	waitAdvertisedBy(t, p4, nodes...)
	waitAdvertisedBy(t, p6, nodes...)
	for _, vip := range []netip.Addr{vip1, vip2, vip6} {
		waitWithdrawn(t, hostPrefix(vip))
	}

	if err := kube.CoreV1().Services(ns).Delete(ctxT(t), "agg1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAdvertisedBy(t, p4, nodes...) // agg2 still in it
	for _, name := range []string{"agg2", "agg6"} {
		if err := kube.CoreV1().Services(ns).Delete(ctxT(t), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitWithdrawn(t, p4)
	waitWithdrawn(t, p6)
}

// advertisementType Interface: the addresses of a local device, each
// alone, from the node that has it, while it is up.
func TestInterface(t *testing.T) {
	ensureAgents(t)
	n := nodes[0]
	v4, v6 := netip.MustParsePrefix("198.18.61.1/32"), netip.MustParsePrefix("fd00:18:0:61::1/128")
	n.addLocalDevice(t, vipsDevice, v4, v6)
	waitAdvertisedBy(t, v4, n)
	waitAdvertisedBy(t, v6, n)

	// Its veth peer down: the device is up but its link is not.
	n.ip(t, "link", "set", vipsDevice+"-p", "down")
	waitWithdrawn(t, v4)
	waitWithdrawn(t, v6)
	n.ip(t, "link", "set", vipsDevice+"-p", "up")
	waitAdvertisedBy(t, v4, n)
	n.ip(t, "addr", "del", v4.String(), "dev", vipsDevice)
	waitWithdrawn(t, v4)
}

// A Service that loses its selection (its label) is withdrawn; one of
// another load balancer class is never advertised.
func TestSelectionAndClass(t *testing.T) {
	ensureAgents(t)
	ns := newNamespace(t)
	createService(t, ns, "web", singleStack(corev1.IPv4Protocol))
	vip := waitVIP(t, ns, "web")
	waitAdvertisedBy(t, hostPrefix(vip), nodes...)

	svc, err := kube.CoreV1().Services(ns).Get(ctxT(t), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(svc.Labels, serviceLabel)
	if _, err := kube.CoreV1().Services(ns).Update(ctxT(t), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWithdrawn(t, hostPrefix(vip))

	// io.cilium/bgp-control-plane is advertised; io.cilium/l2-announcer is
	// not (LB IPAM does not serve that class here: L2 is off, so it has no
	// IP either; the BGP class gets one because BGP is on).
	createService(t, ns, "bgp-class", func(s *corev1.Service) {
		singleStack(corev1.IPv4Protocol)(s)
		s.Spec.LoadBalancerClass = ptrTo("io.cilium/bgp-control-plane")
	})
	waitAdvertisedBy(t, hostPrefix(waitVIP(t, ns, "bgp-class")), nodes...)
}

// externalTrafficPolicy: Local: only nodes with a ready endpoint advertise.
func TestLocalTrafficPolicy(t *testing.T) {
	ensureAgents(t)
	ns := newNamespace(t)
	createService(t, ns, "local", func(s *corev1.Service) {
		singleStack(corev1.IPv4Protocol)(s)
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	})
	vip := waitVIP(t, ns, "local")
	p := hostPrefix(vip)
	waitWithdrawn(t, p) // no endpoint anywhere: nobody advertises

	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "local-1", Labels: map[string]string{discoveryv1.LabelServiceName: "local"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"198.18.46.2"}, NodeName: ptrTo("node2"), Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(true)}},
			{Addresses: []string{"198.18.46.3"}, NodeName: ptrTo("node3"), Conditions: discoveryv1.EndpointConditions{Ready: ptrTo(false)}},
		},
	}
	created, err := kube.DiscoveryV1().EndpointSlices(ns).Create(ctxT(t), slice, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitAdvertisedBy(t, p, nodes[1])

	created.Endpoints[0].Conditions.Ready = ptrTo(false)
	created.Endpoints[1].Conditions.Ready = ptrTo(true)
	if created, err = kube.DiscoveryV1().EndpointSlices(ns).Update(ctxT(t), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAdvertisedBy(t, p, nodes[2])

	if err := kube.DiscoveryV1().EndpointSlices(ns).Delete(ctxT(t), created.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWithdrawn(t, p)
}

// PodCIDR: with multi-pool IPAM (the suite's agents) no node advertises
// Node.spec.podCIDRs, as in Cilium, and each says so once in its log; the
// same advertisement's CiliumPodIPPool entry goes out. node1 restarted
// without multi-pool advertises its own pod CIDRs, IPv4 and IPv6, as long
// as the advertisement asks for them.
func TestPodCIDR(t *testing.T) {
	ensureAgents(t)
	poolCIDR := map[*node]netip.Prefix{}
	for _, n := range nodes {
		poolCIDR[n] = nodePoolCIDR(t, n)
	}
	marks := map[*node]agentproc.LogMark{}
	for _, n := range nodes {
		marks[n] = n.Mark()
	}
	adv := &v2alpha1.CiliumBGPAdvertisement{
		ObjectMeta: metav1.ObjectMeta{Name: "hbgp-pods", Labels: map[string]string{advertLabel: "lb"}},
		Spec: v2alpha1.CiliumBGPAdvertisementSpec{Advertisements: []v2alpha1.BGPAdvertisement{
			{AdvertisementType: v2alpha1.BGPPodCIDRAdvert},
			{AdvertisementType: v2alpha1.BGPCiliumPodIPPoolAdvert,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"io.cilium.podippool.name": podPoolName}}},
		}},
	}
	c := herald.CiliumV2alpha1().CiliumBGPAdvertisements()
	if _, err := c.Create(ctxT(t), adv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctxT(t), adv.Name, metav1.DeleteOptions{}) })
	// The pool's CIDRs, of the same derivation, reached FRR: the pod
	// CIDRs would have too.
	for n, cidr := range poolCIDR {
		waitAdvertisedBy(t, cidr, n)
	}
	for i, n := range nodes {
		for _, cidr := range podCIDRs(i) {
			if paths, err := pathsOf(netip.MustParsePrefix(cidr)); err != nil || len(paths) > 0 {
				t.Errorf("pod CIDR %s with multi-pool IPAM: %s %v", cidr, describe(paths), err)
			}
		}
		waitFor(t, n.Name+" logs that PodCIDR is not advertised", func() (bool, string) {
			logs := n.LogsSince(marks[n])
			return strings.Count(logs, "asks for PodCIDR") == 1 && strings.Contains(logs, "advertisement=hbgp-pods"), logs
		})
	}

	agentproc.RestartWith(t, []*agentproc.Agent{nodes[0].Agent}, func(t testing.TB) { ensureAgents(t) }, "--ipam=none")
	for _, cidr := range podCIDRs(0) {
		waitAdvertisedBy(t, netip.MustParsePrefix(cidr), nodes[0])
	}
	if err := c.Delete(ctxT(t), adv.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, cidr := range podCIDRs(0) {
		waitWithdrawn(t, netip.MustParsePrefix(cidr))
	}
}

// nodePoolCIDR waits for the node's CIDR of the suite's pod pool.
func nodePoolCIDR(t *testing.T, n *node) netip.Prefix {
	t.Helper()
	var cidr netip.Prefix
	waitFor(t, n.Name+"'s CIDR of "+podPoolName, func() (bool, string) {
		cn, err := herald.CiliumV2().CiliumNodes().Get(ctxT(t), n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, a := range cn.Spec.IPAM.Pools.Allocated {
			if a.Pool == podPoolName && len(a.CIDRs) > 0 {
				cidr = netip.MustParsePrefix(string(a.CIDRs[0]))
			}
		}
		return cidr.IsValid(), fmt.Sprintf("%+v", cn.Spec.IPAM.Pools.Allocated)
	})
	return cidr
}

// CiliumPodIPPool: each node advertises its CIDRs of the selected pod
// pools (multi-pool IPAM), and only those.
func TestCiliumPodIPPool(t *testing.T) {
	ensureAgents(t)
	cidrOf := map[*node]netip.Prefix{}
	for _, n := range nodes {
		cidrOf[n] = nodePoolCIDR(t, n)
	}
	adv := &v2alpha1.CiliumBGPAdvertisement{
		ObjectMeta: metav1.ObjectMeta{Name: "hbgp-pools", Labels: map[string]string{advertLabel: "lb"}},
		Spec: v2alpha1.CiliumBGPAdvertisementSpec{Advertisements: []v2alpha1.BGPAdvertisement{{
			AdvertisementType: v2alpha1.BGPCiliumPodIPPoolAdvert,
			Selector:          &metav1.LabelSelector{MatchLabels: map[string]string{"routed": "true"}},
		}}},
	}
	c := herald.CiliumV2alpha1().CiliumBGPAdvertisements()
	if _, err := c.Create(ctxT(t), adv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Delete(ctxT(t), adv.Name, metav1.DeleteOptions{}) })
	for n, cidr := range cidrOf {
		waitAdvertisedBy(t, cidr, n)
	}
	if err := c.Delete(ctxT(t), adv.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, cidr := range cidrOf {
		waitWithdrawn(t, cidr)
	}
}
