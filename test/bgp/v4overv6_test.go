package bgp

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// IPv4 routes over the IPv6 sessions, as Cilium's examples peer (IPv6
// peers, a peer config of both families): tor6 is the instance's only
// peer and the router activates IPv4 unicast for the nodes' IPv6
// neighbors. GoBGP and FRR negotiate the extended next hop (RFC 8950):
// FRR learns the IPv4 VIP from each node with the node's IPv6 address as
// next hop, and installs it in its kernel over IPv6 next hops.
func TestIPv4OverIPv6Session(t *testing.T) {
	ensureAgents(t)
	c := herald.CiliumV2alpha1()
	pc := peerConfig("hbgp-mp6", "ipv6", "")
	pc.Spec.Families = append(pc.Spec.Families, v2alpha1.CiliumBGPFamilyWithAdverts{
		CiliumBGPFamily: v2alpha1.CiliumBGPFamily{Afi: "ipv4", Safi: "unicast"},
		Advertisements:  &metav1.LabelSelector{MatchLabels: map[string]string{advertLabel: "lb"}},
	})
	if _, err := c.CiliumBGPPeerConfigs().Create(ctxT(t), pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CiliumBGPPeerConfigs().Delete(context.Background(), pc.Name, metav1.DeleteOptions{}) })
	lines := []string{"router bgp 65000", "address-family ipv4 unicast"}
	undo := []string{"router bgp 65000", "address-family ipv4 unicast"}
	for _, n := range nodes {
		lines = append(lines, fmt.Sprintf("neighbor %s activate", n.host.IP6))
		undo = append(undo, fmt.Sprintf("no neighbor %s activate", n.host.IP6))
	}
	if err := router.Configure(lines...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = router.Configure(undo...) })
	setSharedPeers(t, []v2alpha1.CiliumBGPPeer{{Name: "tor6", PeerAddress: ptr.To(routerHost.IP6.String()), PeerASN: ptr.To[int64](routerASN),
		PeerConfigRef: &v2alpha1.PeerConfigReference{Name: pc.Name}}})

	ns := newNamespace(t)
	createService(t, ns, "web4", singleStack(corev1.IPv4Protocol))
	vip := hostPrefix(waitVIP(t, ns, "web4"))
	waitFor(t, fmt.Sprintf("%s from every node over IPv6", vip), func() (bool, string) {
		paths, err := pathsOf(vip)
		if err != nil {
			return false, err.Error()
		}
		got := map[string]bool{}
		for _, p := range paths {
			if p.NextHop.String() != p.PeerID || p.Stale {
				return false, describe(paths)
			}
			got[p.PeerID] = true
		}
		for _, n := range nodes {
			if !got[n.host.IP6.String()] {
				return false, describe(paths)
			}
		}
		return len(got) == len(nodes), describe(paths)
	})
	waitFor(t, fmt.Sprintf("the router's kernel route to %s via the nodes' IPv6 addresses", vip), func() (bool, string) {
		out, _ := exec.Command("ip", "-n", routerHost.Netns, "-4", "route", "show", vip.String()).CombinedOutput()
		for _, n := range nodes {
			if !strings.Contains(string(out), "via inet6 "+n.host.IP6.String()+" ") {
				return false, string(out)
			}
		}
		return true, ""
	})
}

// setSharedPeers makes peers the shared cluster config's only ones for
// the test, and puts its peers back after.
func setSharedPeers(t *testing.T, peers []v2alpha1.CiliumBGPPeer) {
	t.Helper()
	c := herald.CiliumV2alpha1()
	set := func(peers []v2alpha1.CiliumBGPPeer) error {
		cc, err := c.CiliumBGPClusterConfigs().Get(ctxT(t), clusterConfigName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cc.Spec.BGPInstances[0].Peers = peers
		_, err = c.CiliumBGPClusterConfigs().Update(ctxT(t), cc, metav1.UpdateOptions{})
		return err
	}
	cc, err := c.CiliumBGPClusterConfigs().Get(ctxT(t), clusterConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	shared := cc.Spec.BGPInstances[0].Peers
	if err := set(peers); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := set(shared); err != nil {
			t.Errorf("restoring the shared peers: %v", err)
			return
		}
		var addrs []string
		for _, n := range nodes {
			addrs = append(addrs, n.host.IP.String(), n.host.IP6.String())
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if _, err := router.WaitEstablished(ctx, addrs...); err != nil {
			t.Errorf("the shared sessions after the test: %v", err)
		}
	})
}
