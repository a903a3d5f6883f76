package bgp

import (
	"fmt"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/tables"
)

// An IPv6-only node (no IPv4 InternalIP) gets its router ID the way
// Cilium's default mode gives one: the last four bytes of a MAC address,
// here of the device holding the node's IPv6 InternalIP. Its sessions,
// IPv6 and IPv4, establish with it; FRR sees the new router ID.
func TestIPv6OnlyRouterID(t *testing.T) {
	ensureAgents(t)
	n := nodes[1]
	setInternalIPs := func(ips ...netip.Addr) {
		t.Helper()
		kn, err := kube.CoreV1().Nodes().Get(ctxT(t), n.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		kn.Status.Addresses = kn.Status.Addresses[:0]
		for _, ip := range ips {
			kn.Status.Addresses = append(kn.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip.String()})
		}
		if _, err := kube.CoreV1().Nodes().UpdateStatus(ctxT(t), kn, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setInternalIPs(n.host.IP6)
	t.Cleanup(func() { setInternalIPs(n.host.IP, n.host.IP6) })

	mac := n.host.MAC
	want := netip.AddrFrom4([4]byte(mac[len(mac)-4:])).String()
	waitRouterID := func(want string) {
		t.Helper()
		waitFor(t, fmt.Sprintf("node %s's router ID %s, at FRR too", n.Name, want), func() (bool, string) {
			nc, err := herald.CiliumV2alpha1().CiliumBGPNodeConfigs().Get(ctxT(t), n.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if len(nc.Spec.BGPInstances) != 1 || ptr.Deref(nc.Spec.BGPInstances[0].RouterID, "") != want {
				return false, fmt.Sprintf("spec %+v", nc.Spec)
			}
			ns, err := router.Neighbors()
			if err != nil {
				return false, err.Error()
			}
			var got []string
			for _, a := range []string{n.host.IP.String(), n.host.IP6.String()} {
				got = append(got, ns[a].State+"/"+ns[a].RemoteRouterID)
			}
			return !slices.ContainsFunc(got, func(s string) bool { return s != "Established/"+want }), fmt.Sprint(got)
		})
	}
	waitRouterID(want)
	waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "2 of 2 sessions established")

	setInternalIPs(n.host.IP, n.host.IP6)
	waitRouterID(n.host.IP.String())
}
