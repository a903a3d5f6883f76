package bgp

import (
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/frr"
)

// BGP unnumbered against FRR: a point-to-point link with no address but
// IPv6 link-local ones, FRR's `neighbor <interface> interface`, and a
// cluster config peer with autoDiscovery mode Unnumbered. The node finds
// FRR from its Router Advertisements, FRR the node from Herald's, and
// routes of both families go over the one link-local session (IPv4 ones
// with an IPv6 next hop, RFC 8950).
func TestUnnumbered(t *testing.T) {
	ensureAgents(t)
	n := nodes[0]
	dev, routerDev, peerName := unDev, unRouterDev, unPeer
	peer := setupUnnumbered(t, n)

	// BFD runs between the two link-local addresses.
	waitFor(t, "BFD over the unnumbered link", func() (bool, string) {
		peers, err := router.BFDPeers()
		if err != nil {
			return false, err.Error()
		}
		fp := peers[peer.LocalAddress.String()]
		var mine []tables.BGPBFDSession
		for _, s := range dbgTable[tables.BGPBFDSession](t, n, tables.BGPBFDSessionsTableName) {
			if s.Peer == peer.Address {
				mine = append(mine, s)
			}
		}
		up := fp.Status == "up" && len(mine) == 1 && mine[0].State == tables.BFDStateUp
		return up, fmt.Sprintf("FRR: %+v; node: %+v", fp, mine)
	})

	// Routes of both families arrive over it, with the node's link-local
	// address as next hop.
	ns := newNamespace(t)
	createService(t, ns, "web4", singleStack(corev1.IPv4Protocol))
	createService(t, ns, "web6", singleStack(corev1.IPv6Protocol))
	for _, name := range []string{"web4", "web6"} {
		p := hostPrefix(waitVIP(t, ns, name))
		waitFor(t, fmt.Sprintf("%s from the unnumbered session", p), func() (bool, string) {
			paths, err := pathsOf(p)
			if err != nil {
				return false, err.Error()
			}
			for _, path := range paths {
				if path.PeerID == routerDev || path.PeerID == peer.LocalAddress.String() {
					return true, ""
				}
			}
			return false, describe(paths)
		})
	}

	// The session stayed up all along (the router's Neighbor
	// Advertisements, without the router flag since its IPv6 forwarding is
	// off on the link, change nothing).
	if ns, err := router.Neighbors(); err != nil || ns[routerDev].ConnectionsDropped != 0 || ns[routerDev].State != "Established" {
		t.Errorf("unnumbered session %+v (%v), want established once and never dropped", ns[routerDev], err)
	}

	// The node's CiliumBGPNodeConfig names the interface and the address
	// found.
	waitFor(t, "the unnumbered peer in "+n.Name+"'s CiliumBGPNodeConfig", func() (bool, string) {
		nc, err := herald.CiliumV2alpha1().CiliumBGPNodeConfigs().Get(ctxT(t), n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, inst := range nc.Spec.BGPInstances {
			for _, p := range inst.Peers {
				if p.Name == peerName {
					ok := ptr.Deref(p.PeerInterface, "") == dev && ptr.Deref(p.PeerAddress, "") == peer.Address.WithZone("").String() &&
						p.AutoDiscovery != nil && p.AutoDiscovery.Mode == v2alpha1.BGPUnnumberedMode
					return ok, fmt.Sprintf("%+v", p)
				}
			}
		}
		return false, "no such peer"
	})
	// And herald-dbg shows the router it was found from.
	if rows := dbgTable[tables.BGPLinkNeighbor](t, n, tables.BGPLinkNeighborsTableName); !slices.ContainsFunc(rows, func(r tables.BGPLinkNeighbor) bool {
		return r.Device == dev && r.Address == peer.Address.WithZone("")
	}) {
		t.Errorf("bgp-link-neighbors of %s: %+v, want %s on %s", n.Name, rows, peer.Address, dev)
	}
}

// The unnumbered link of the tests: dev on the node, routerDev on the
// router, and the names of the peer and its peer config.
const (
	unDev, unRouterDev, unPeer, unPeerConfig = "hbgp-un", "hbgp-un-r", "unnumbered", "unnumbered"
)

// setupUnnumbered links node n to the router with a veth pair that has only
// IPv6 link-local addresses, gives the cluster config an unnumbered peer on
// it (both families, BFD) and FRR its `neighbor <interface> interface`, and
// waits for the session. Everything is undone at the test's end.
func setupUnnumbered(t *testing.T, n *node) tables.BGPPeer {
	t.Helper()
	dev, routerDev, peerName, pcName := unDev, unRouterDev, unPeer, unPeerConfig
	n.ip(t, "link", "add", dev, "type", "veth", "peer", "name", routerDev, "netns", routerHost.Netns)
	t.Cleanup(func() { _ = exec.Command("ip", "-n", n.host.Netns, "link", "del", dev).Run() })
	for ns, d := range map[string]string{n.host.Netns: dev, routerHost.Netns: routerDev} {
		if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf."+d+".disable_ipv6=0").CombinedOutput(); err != nil {
			t.Fatalf("enabling IPv6 on %s: %v: %s", d, err, out)
		}
		if out, err := exec.Command("ip", "-n", ns, "link", "set", d, "up").CombinedOutput(); err != nil {
			t.Fatalf("%s up: %v: %s", d, err, out)
		}
	}

	// Both families over the one session, and BFD on it.
	pc := peerConfig(pcName, "ipv4", "")
	pc.Spec.BFD = &v2alpha1.CiliumBGPBFD{ReceiveIntervalMilliseconds: ptr.To[int32](bfdIntervalMs),
		TransmitIntervalMilliseconds: ptr.To[int32](bfdIntervalMs), DetectMultiplier: ptr.To[int32](bfdMult)}
	pc.Spec.Families = append(pc.Spec.Families, v2alpha1.CiliumBGPFamilyWithAdverts{
		CiliumBGPFamily: v2alpha1.CiliumBGPFamily{Afi: "ipv6", Safi: "unicast"}, Advertisements: pc.Spec.Families[0].Advertisements})
	if _, err := herald.CiliumV2alpha1().CiliumBGPPeerConfigs().Create(ctxT(t), pc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = herald.CiliumV2alpha1().CiliumBGPPeerConfigs().Delete(ctxT(t), pcName, metav1.DeleteOptions{})
	})
	editPeers(t, func(peers []v2alpha1.CiliumBGPPeer) []v2alpha1.CiliumBGPPeer {
		return append(peers, v2alpha1.CiliumBGPPeer{Name: peerName, PeerASN: ptr.To[int64](routerASN),
			AutoDiscovery: &v2alpha1.BGPAutoDiscovery{Mode: v2alpha1.BGPUnnumberedMode, Unnumbered: &v2alpha1.BGPUnnumbered{Interface: dev}},
			PeerConfigRef: &v2alpha1.PeerConfigReference{Name: pcName}})
	})
	t.Cleanup(func() {
		editPeers(t, func(peers []v2alpha1.CiliumBGPPeer) []v2alpha1.CiliumBGPPeer {
			return slices.DeleteFunc(peers, func(p v2alpha1.CiliumBGPPeer) bool { return p.Name == peerName })
		})
	})

	// The peer runs over the interface (the node advertises itself there)
	// before the router is configured.
	waitPeer(t, n, peerName, func(p tables.BGPPeer) bool { return p.Interface == dev && p.Unnumbered })

	if err := router.Configure(fmt.Sprintf("router bgp %d", routerASN),
		fmt.Sprintf("neighbor %s interface remote-as %d", routerDev, nodeASN), fmt.Sprintf("neighbor %s timers connect 1", routerDev),
		fmt.Sprintf("neighbor %s bfd profile %s", routerDev, bfdProfile),
		"address-family ipv4 unicast", fmt.Sprintf("neighbor %s activate", routerDev), "exit-address-family",
		"address-family ipv6 unicast", fmt.Sprintf("neighbor %s activate", routerDev)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = router.Configure(fmt.Sprintf("router bgp %d", routerASN), fmt.Sprintf("no neighbor %s interface", routerDev))
	})

	// The node learns the router's link-local address, and the session
	// comes up from the node's own.
	configured := time.Now()
	peer := waitPeer(t, n, peerName, func(p tables.BGPPeer) bool { return p.Error == "" && p.Address.IsValid() })
	t.Logf("the node knows the router at %s %s after the router was configured", peer.Address, time.Since(configured).Round(time.Millisecond))
	if !peer.Address.IsLinkLocalUnicast() || peer.Address.Zone() == "" || peer.Interface != dev || !peer.LocalAddress.IsLinkLocalUnicast() || !peer.Unnumbered {
		t.Errorf("unnumbered peer %+v: want link-local addresses on %s", peer, dev)
	}
	if _, err := router.WaitNeighbors(ctxT(t), func(ns map[string]frr.Neighbor) bool { return ns[routerDev].State == "Established" }); err != nil {
		t.Fatalf("unnumbered session: %v\n%s\n----- agent -----\n%s", err, router.LogTail(40), n.Logs(40))
	}
	t.Logf("session established %s after the router was configured", time.Since(configured).Round(time.Millisecond))

	return peer
}

// An agent killed with -9 finds the router again as it starts: the kernel
// keeps the neighbour, though no longer necessarily flagged as a router
// (the agent's memory of the flag died with it), and the session comes back.
func TestUnnumberedAgentKilled(t *testing.T) {
	ensureAgents(t)
	n := nodes[0]
	setupUnnumbered(t, n)
	before, err := router.Neighbors()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Kill9(); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(); err != nil {
		t.Fatal(err)
	}
	waitPeer(t, n, unPeer, func(p tables.BGPPeer) bool { return p.Error == "" && p.Address.IsValid() })
	if _, err := router.WaitNeighbors(ctxT(t), func(ns map[string]frr.Neighbor) bool {
		return ns[unRouterDev].State == "Established" && ns[unRouterDev].ConnectionsEstablished > before[unRouterDev].ConnectionsEstablished
	}); err != nil {
		t.Fatalf("unnumbered session after the agent's restart: %v\n%s", err, n.Logs(40))
	}
}

// editPeers changes the peers of the shared cluster config's instance.
func editPeers(t *testing.T, edit func([]v2alpha1.CiliumBGPPeer) []v2alpha1.CiliumBGPPeer) {
	t.Helper()
	cc, err := herald.CiliumV2alpha1().CiliumBGPClusterConfigs().Get(ctxT(t), clusterConfigName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cc.Spec.BGPInstances[0].Peers = edit(cc.Spec.BGPInstances[0].Peers)
	if _, err := herald.CiliumV2alpha1().CiliumBGPClusterConfigs().Update(ctxT(t), cc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitPeer waits until the node's bgp-instances has the named peer as
// wanted, and returns it.
func waitPeer(t *testing.T, n *node, name string, ok func(tables.BGPPeer) bool) tables.BGPPeer {
	t.Helper()
	var found tables.BGPPeer
	waitFor(t, "peer "+name+" of "+n.Name, func() (bool, string) {
		// An agent that has just started may not answer yet.
		insts, err := agentproc.Table[tables.BGPInstance](n.Agent, tables.BGPInstancesTableName)
		if err != nil {
			return false, err.Error()
		}
		for _, inst := range insts {
			for _, p := range inst.Peers {
				if p.Name == name {
					found = p
					return ok(p), fmt.Sprintf("%+v", p)
				}
			}
		}
		return false, "no such peer"
	})
	return found
}
