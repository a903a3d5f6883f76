package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// Multiprotocol BGP: IPv6 routes over the IPv4 sessions. The test makes
// tor4 (the router's IPv4 address) the instance's only peer, with a peer
// config of both families, so that FRR learns the IPv6 VIP, and the /120
// holding it (a prefix, not a host route: an aggregate, since the nodes'
// pod CIDRs are not advertised with the suite's multi-pool IPAM), from
// the IPv4 sessions alone. Each path's next hop must
// be its node's IPv6 address on the LAN (not the IPv4-mapped address
// GoBGP would send), installed in the router's kernel, and the VIP must
// answer a curl from the router through it. A node whose interface loses
// its IPv6 address withdraws its IPv6 paths and says why in its
// CiliumBGPNodeConfig and herald-dbg explain; it advertises them again
// once the address is back.
func TestIPv6OverIPv4Session(t *testing.T) {
	ensureAgents(t)
	ensureTraffic(t)
	useMultiprotocolPeer(t)
	ns := newNamespace(t)
	createService(t, ns, "web6", singleStack(corev1.IPv6Protocol))
	if err := pods.SetEndpoints(context.Background(), kube, ns, "web6", corev1.IPv6Protocol, "node1", "node2", "node3"); err != nil {
		t.Fatal(err)
	}
	vip := hostPrefix(waitVIP(t, ns, "web6"))
	aggregate := netip.PrefixFrom(vip.Addr(), 120).Masked()
	waitAdvertisedOverIPv4(t, vip, nodes...)
	waitAdvertisedOverIPv4(t, aggregate, nodes...)
	waitKernelECMP(t, vip, nodes...)
	for range 5 {
		waitServedFromRouter(t, vip.Addr())
	}

	// node3 without an IPv6 address: its IPv6 paths go, the others stay.
	n3 := nodes[2]
	setHostIPv6(t, n3, false)
	t.Cleanup(func() { setHostIPv6(t, n3, true) })
	waitAdvertisedOverIPv4(t, vip, nodes[0], nodes[1])
	waitAdvertisedOverIPv4(t, aggregate, nodes[0], nodes[1])
	waitNodeCondition(t, n3, tables.ConditionBGPPeersEstablished, metav1.ConditionFalse,
		`peer "tor4" (`+routerHost.IP.String()+`) of instance "main" gets no IPv6 routes: no IPv6 next hop for its ipv6-unicast routes: eth0, the interface toward `+routerHost.IP.String()+`, has no global IPv6 address`)
	if nc, err := herald.CiliumV2alpha1().CiliumBGPNodeConfigs().Get(ctxT(t), n3.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	} else if c, _ := condition(nc.Status.Conditions, tables.ConditionBGPPeersEstablished); c.Reason != tables.ReasonBGPNoIPv6NextHop {
		t.Errorf("node3's condition %+v, want reason %s", c, tables.ReasonBGPNoIPv6NextHop)
	}
	if out, err := n3.Dbg("explain", "service", ns+"/web6"); err != nil ||
		!strings.Contains(string(out), "BGP: "+vip.String()+" to peer tor4") || !strings.Contains(string(out), "NOT sent: no IPv6 next hop") {
		t.Errorf("herald-dbg explain service on node3: %v\n%s", err, out)
	}
	waitServedFromRouter(t, vip.Addr())

	setHostIPv6(t, n3, true)
	waitAdvertisedOverIPv4(t, vip, nodes...)
	waitAdvertisedOverIPv4(t, aggregate, nodes...)
	waitNodeCondition(t, n3, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "1 of 1 sessions established")
}

// useMultiprotocolPeer makes tor4, with both families, the shared
// instance's only peer until the test ends; then the shared peers are
// back and every session is up again for the tests that follow.
func useMultiprotocolPeer(t *testing.T) {
	t.Helper()
	c := herald.CiliumV2alpha1()
	pc := peerConfig("hbgp-mp", "ipv4", "")
	pc.Spec.Families = append(pc.Spec.Families, v2alpha1.CiliumBGPFamilyWithAdverts{
		CiliumBGPFamily: v2alpha1.CiliumBGPFamily{Afi: "ipv6", Safi: "unicast"},
		Advertisements:  &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: advertLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"lb", "mp"}}}},
	})
	if _, err := c.CiliumBGPPeerConfigs().Create(ctxT(t), pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CiliumBGPPeerConfigs().Delete(context.Background(), pc.Name, metav1.DeleteOptions{}) })
	// The Services' /120s, for this peer config only.
	adv := &v2alpha1.CiliumBGPAdvertisement{
		ObjectMeta: metav1.ObjectMeta{Name: "hbgp-mp-aggregate", Labels: map[string]string{advertLabel: "mp"}},
		Spec: v2alpha1.CiliumBGPAdvertisementSpec{Advertisements: []v2alpha1.BGPAdvertisement{{
			AdvertisementType: v2alpha1.BGPServiceAdvert,
			Service: &v2alpha1.BGPServiceOptions{Addresses: []v2alpha1.BGPServiceAddressType{v2alpha1.BGPLoadBalancerIPAddr},
				AggregationLengthIPv6: ptrTo[int16](120)},
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{serviceLabel: "yes"}},
		}}},
	}
	if _, err := c.CiliumBGPAdvertisements().Create(ctxT(t), adv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CiliumBGPAdvertisements().Delete(context.Background(), adv.Name, metav1.DeleteOptions{}) })

	setSharedPeers(t, []v2alpha1.CiliumBGPPeer{{Name: "tor4", PeerAddress: ptr.To(routerHost.IP.String()), PeerASN: ptr.To[int64](routerASN),
		PeerConfigRef: &v2alpha1.PeerConfigReference{Name: pc.Name}}})
}

// waitAdvertisedOverIPv4 waits until FRR's IPv6 table has exactly one
// path for the prefix from each of these nodes, learned on the node's
// IPv4 session and with the node's IPv6 address as next hop.
func waitAdvertisedOverIPv4(t *testing.T, p netip.Prefix, ns ...*node) {
	t.Helper()
	var want []string
	for _, n := range ns {
		want = append(want, n.host.IP.String()+" via "+n.host.IP6.String())
	}
	slices.Sort(want)
	waitFor(t, fmt.Sprintf("%s advertised over IPv4 sessions by exactly %v", p, want), func() (bool, string) {
		paths, err := pathsOf(p)
		if err != nil {
			return false, err.Error()
		}
		var got []string
		for _, path := range paths {
			if !path.Valid || path.Stale || (len(ns) > 1 && !path.Multipath) {
				return false, describe(paths)
			}
			got = append(got, path.PeerID+" via "+path.NextHop.String())
		}
		slices.Sort(got)
		return slices.Equal(got, want), describe(paths)
	})
}

// setHostIPv6 adds or removes a node's IPv6 address on its LAN interface.
func setHostIPv6(t *testing.T, n *node, present bool) {
	t.Helper()
	args := []string{"-n", n.host.Netns, "addr", "del", n.host.IP6.String() + "/64", "dev", "eth0"}
	if present {
		args = []string{"-n", n.host.Netns, "addr", "replace", n.host.IP6.String() + "/64", "dev", "eth0", "nodad"}
	}
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
}
