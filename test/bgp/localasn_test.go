package bgp

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// rackASN is the AS number the override gives one node: neither the
// cluster config's (nodeASN) nor the router's.
const rackASN = 65011

// A node's CiliumBGPNodeConfigOverride gives it its own AS number
// (localASN) while the cluster config's instance keeps the other nodes at
// nodeASN, as with a rack per AS. The router, told that node's AS, has
// every session Established, each at its node's AS, and takes a
// LoadBalancer Service's routes from all three nodes as one ECMP set; the
// node's CiliumBGPNodeConfig names the new AS. With localASN removed from
// the override (and the router told the default again), the node's
// sessions come back at nodeASN.
//
// The test cannot pass with the override ignored: the router expects
// rackASN from that node and answers an OPEN carrying any other AS with a
// NOTIFICATION (Bad Peer AS), so its sessions would never be Established;
// the AS path of each route, which the node writes, must be rackASN from
// that node and nodeASN from the others; and its CiliumBGPNodeConfig must
// say rackASN. Removing the override's localASN is checked the same way
// the other round.
func TestLocalASNPeering(t *testing.T) {
	ensureAgents(t)
	rack := nodes[1]
	asOf := func(asn int64) map[*node]int64 {
		m := map[*node]int64{}
		for _, n := range nodes {
			m[n] = nodeASN
		}
		m[rack] = asn
		return m
	}
	waitSessionsAt(t, asOf(nodeASN))

	api := herald.CiliumV2alpha1().CiliumBGPNodeConfigOverrides()
	ov := &v2alpha1.CiliumBGPNodeConfigOverride{
		ObjectMeta: metav1.ObjectMeta{Name: rack.Name},
		Spec: v2alpha1.CiliumBGPNodeConfigOverrideSpec{BGPInstances: []v2alpha1.CiliumBGPNodeConfigInstanceOverride{
			{Name: "main", LocalASN: ptr.To[int64](rackASN)},
		}},
	}
	if _, err := api.Create(ctxT(t), ov, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = api.Delete(ctxT(t), rack.Name, metav1.DeleteOptions{})
		setRouterRemoteAS(t, rack, nodeASN)
		waitSessionsAt(t, asOf(nodeASN))
	})
	setRouterRemoteAS(t, rack, rackASN)
	waitSessionsAt(t, asOf(rackASN))
	waitNodeConfigASN(t, rack, rackASN)

	ns := newNamespace(t)
	var prefixes []netip.Prefix
	for name, fam := range map[string]corev1.IPFamily{"rack4": corev1.IPv4Protocol, "rack6": corev1.IPv6Protocol} {
		createService(t, ns, name, singleStack(fam))
		prefixes = append(prefixes, hostPrefix(waitVIP(t, ns, name)))
	}
	for _, p := range prefixes {
		waitASPaths(t, p, asOf(rackASN))
		waitKernelECMP(t, p, nodes...)
	}

	// Back to the cluster config's AS: the override stays, without
	// localASN.
	ov, err := api.Get(ctxT(t), rack.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ov.Spec.BGPInstances[0].LocalASN = nil
	if _, err := api.Update(ctxT(t), ov, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	setRouterRemoteAS(t, rack, nodeASN)
	waitSessionsAt(t, asOf(nodeASN))
	waitNodeConfigASN(t, rack, nodeASN)
	for _, p := range prefixes {
		waitASPaths(t, p, asOf(nodeASN))
	}
}

// setRouterRemoteAS tells the router n's AS number, on both of n's
// sessions (FRR resets them).
func setRouterRemoteAS(t *testing.T, n *node, asn int64) {
	t.Helper()
	if err := router.Configure(fmt.Sprintf("router bgp %d", routerASN),
		fmt.Sprintf("neighbor %s remote-as %d", n.host.IP, asn),
		fmt.Sprintf("neighbor %s remote-as %d", n.host.IP6, asn)); err != nil {
		t.Fatal(err)
	}
}

// waitSessionsAt waits until the router has both sessions of every node
// Established with the node's AS number as their remote AS. FRR shows the
// remote AS it is configured with, and establishes a session only when
// the OPEN carries it.
func waitSessionsAt(t *testing.T, want map[*node]int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("every session Established at %v", asNames(want)), func() (bool, string) {
		nbrs, err := router.Neighbors()
		if err != nil {
			return false, err.Error()
		}
		for n, asn := range want {
			for _, a := range []netip.Addr{n.host.IP, n.host.IP6} {
				nb := nbrs[a.String()]
				if nb.State != "Established" || int64(nb.RemoteAS) != asn {
					return false, fmt.Sprintf("%s (%s): %s, remote AS %d, last reset %q", a, n.Name, nb.State, nb.RemoteAS, nb.LastReset)
				}
			}
		}
		return true, ""
	})
}

// waitASPaths waits until FRR has the prefix from every node, as an ECMP
// set (advertisedBy), the path of each with its node's AS number as AS
// path.
func waitASPaths(t *testing.T, p netip.Prefix, want map[*node]int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%s from every node, AS paths %v", p, asNames(want)), func() (bool, string) {
		paths, ok, msg := advertisedBy(p, nodes...)
		if !ok {
			return false, msg
		}
		for _, path := range paths {
			for n, asn := range want {
				if path.PeerID == n.sessionAddr(p.Addr()).String() && path.ASPath != strconv.FormatInt(asn, 10) {
					return false, msg
				}
			}
		}
		return true, ""
	})
}

// waitNodeConfigASN waits until n's CiliumBGPNodeConfig names asn as its
// instance's AS number, in the spec and in the status.
func waitNodeConfigASN(t *testing.T, n *node, asn int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("CiliumBGPNodeConfig %s at AS %d", n.Name, asn), func() (bool, string) {
		nc, err := herald.CiliumV2alpha1().CiliumBGPNodeConfigs().Get(ctxT(t), n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var specASNs, statusASNs []int64
		for _, i := range nc.Spec.BGPInstances {
			specASNs = append(specASNs, ptr.Deref(i.LocalASN, 0))
		}
		for _, i := range nc.Status.BGPInstances {
			statusASNs = append(statusASNs, ptr.Deref(i.LocalASN, 0))
		}
		want := []int64{asn}
		return slices.Equal(specASNs, want) && slices.Equal(statusASNs, want),
			fmt.Sprintf("AS numbers: spec %v, status %v", specASNs, statusASNs)
	})
}

// asNames renders a node-to-AS map for messages.
func asNames(m map[*node]int64) string {
	out := ""
	for _, n := range nodes {
		out += fmt.Sprintf(" %s=%d", n.Name, m[n])
	}
	return "[" + out[1:] + "]"
}
