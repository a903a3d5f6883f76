package bgp

import (
	"bytes"
	"fmt"
	"os/exec"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// ipRoute runs `ip route <args>` in a node's namespace.
func ipRoute(t *testing.T, n *node, args ...string) {
	t.Helper()
	out, err := exec.Command("ip", append([]string{"-n", n.host.Netns, "route"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ip -n %s route %v: %v: %s", n.host.Netns, args, err, bytes.TrimSpace(out))
	}
}

// editClusterConfig changes the shared cluster config and puts it back when
// the test ends.
func editClusterConfig(t *testing.T, edit func(*v2alpha1.CiliumBGPClusterConfig)) {
	t.Helper()
	api := herald.CiliumV2alpha1().CiliumBGPClusterConfigs()
	cc, err := api.Get(ctxT(t), clusterConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	orig := cc.Spec.DeepCopy()
	edit(cc)
	if _, err := api.Update(ctxT(t), cc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc, err := api.Get(ctxT(t), clusterConfigName, metav1.GetOptions{})
		if err == nil {
			cc.Spec = *orig
			_, err = api.Update(ctxT(t), cc, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Errorf("restoring the cluster config: %v", err)
		}
	})
}

// nodePeer reads a peer of a node's CiliumBGPNodeConfig spec.
func nodePeer(t *testing.T, n *node, peer string) (v2alpha1.CiliumBGPNodePeer, string) {
	nc, err := herald.CiliumV2alpha1().CiliumBGPNodeConfigs().Get(ctxT(t), n.Name, metav1.GetOptions{})
	if err != nil {
		return v2alpha1.CiliumBGPNodePeer{}, err.Error()
	}
	for _, i := range nc.Spec.BGPInstances {
		for _, p := range i.Peers {
			if p.Name == peer {
				return p, fmt.Sprintf("%+v", p)
			}
		}
	}
	return v2alpha1.CiliumBGPNodePeer{}, fmt.Sprintf("no peer %s in %+v", peer, nc.Spec)
}

// Peer auto-discovery (Cilium's autoDiscovery, mode DefaultGateway): the
// IPv4 peer of every node is the gateway of the node's IPv4 default route,
// here FRR's namespace, and the sessions come up with it. The peer follows
// the route: pointed at an address where no router answers, node1's
// session goes; back at FRR, it returns; without a default route, the
// node's condition says so.
func TestPeerAutoDiscovery(t *testing.T) {
	ensureAgents(t)
	gw := routerHost.IP.String()
	for _, n := range nodes {
		ipRoute(t, n, "replace", "default", "via", gw)
		t.Cleanup(func() { _ = exec.Command("ip", "-n", n.host.Netns, "route", "del", "default").Run() })
	}
	editClusterConfig(t, func(cc *v2alpha1.CiliumBGPClusterConfig) {
		p := &cc.Spec.BGPInstances[0].Peers[0] // tor4
		p.PeerAddress = nil
		p.AutoDiscovery = &v2alpha1.BGPAutoDiscovery{Mode: v2alpha1.BGPDefaultGatewayMode, DefaultGateway: &v2alpha1.DefaultGateway{AddressFamily: "ipv4"}}
	})

	waitPeer := func(n *node, addr string) {
		t.Helper()
		waitFor(t, fmt.Sprintf("node %s's peer tor4 at %s, discovered", n.Name, addr), func() (bool, string) {
			p, msg := nodePeer(t, n, "tor4")
			return ptr.Deref(p.PeerAddress, "") == addr && p.AutoDiscovery != nil && p.AutoDiscovery.DefaultGateway != nil &&
				p.AutoDiscovery.DefaultGateway.AddressFamily == "ipv4", msg
		})
	}
	var addrs []string
	for _, n := range nodes {
		waitPeer(n, gw)
		addrs = append(addrs, n.host.IP.String())
	}
	if _, err := router.WaitEstablished(ctxT(t), addrs...); err != nil {
		t.Fatalf("sessions with the discovered peer: %v", err)
	}

	// The route changes: node1 follows it, away from FRR and back.
	n := nodes[0]
	nowhere := subnet.Addr().Next().Next().Next().String() // .3: no host has it
	ipRoute(t, n, "replace", "default", "via", nowhere)
	waitPeer(n, nowhere)
	waitFor(t, "FRR's session with node1 down", func() (bool, string) {
		ns, err := router.Neighbors()
		if err != nil {
			return false, err.Error()
		}
		s := ns[n.host.IP.String()]
		return s.State != "Established", s.State
	})
	ipRoute(t, n, "replace", "default", "via", gw)
	waitPeer(n, gw)
	if _, err := router.WaitEstablished(ctxT(t), n.host.IP.String()); err != nil {
		t.Fatalf("session back with the discovered peer: %v", err)
	}

	// No default route: the peer is not configured, and the node says why.
	ipRoute(t, n, "del", "default")
	waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionFalse,
		`peer "tor4" of instance "main" is not configured: autoDiscovery: the node has no ipv4 default route with a gateway`)
	ipRoute(t, n, "replace", "default", "via", gw)
	waitNodeCondition(t, n, tables.ConditionBGPPeersEstablished, metav1.ConditionTrue, "2 of 2 sessions established")
}
