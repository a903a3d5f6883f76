package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/heraldlb/herald/test/frr"
)

const (
	routerASN = 65000
	nodeASN   = 65001
	// routedPool is a LoadBalancer pool off the LAN: only BGP brings its
	// IPs to the router.
	routedPool = "198.18.17.0/24"
)

// The BGP resources as a user writes them (Cilium's BGP control plane
// API): every node peers with the router and advertises the IPs of the
// Services labelled bgp=yes, from a pool of their own.
var bgpFixtures = fmt.Sprintf(`
apiVersion: cilium.io/v2alpha1
kind: CiliumLoadBalancerIPPool
metadata: {name: routed}
spec:
  blocks: [{cidr: %s}]
  serviceSelector: {matchLabels: {bgp: "yes"}}
---
apiVersion: cilium.io/v2alpha1
kind: CiliumBGPClusterConfig
metadata: {name: tor}
spec:
  bgpInstances:
  - name: main
    localASN: %d
    peers:
    - name: tor
      peerAddress: %%s
      peerASN: %d
      peerConfigRef: {name: tor}
---
apiVersion: cilium.io/v2alpha1
kind: CiliumBGPPeerConfig
metadata: {name: tor}
spec:
  timers: {connectRetryTimeSeconds: 1, holdTimeSeconds: 9, keepAliveTimeSeconds: 3}
  families:
  - afi: ipv4
    safi: unicast
    advertisements: {matchLabels: {advertise: lb}}
---
apiVersion: cilium.io/v2alpha1
kind: CiliumBGPAdvertisement
metadata:
  name: lb
  labels: {advertise: lb}
spec:
  advertisements:
  - advertisementType: Service
    service: {addresses: [LoadBalancerIP]}
    selector: {matchLabels: {bgp: "yes"}}
`, routedPool, nodeASN, routerASN)

// testBGP: FRR in the router namespace peers with every agent of the
// DaemonSet; a Service's IP from a pool off the LAN reaches the router as
// one route with a next hop per node (ECMP), and curl from the router
// through it reaches the pods.
func testBGP(t *testing.T) {
	var conf strings.Builder
	fmt.Fprintf(&conf, "router bgp %d\n bgp router-id %s\n no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n", routerASN, cl.RouterHost.IP)
	for _, n := range cl.Nodes {
		fmt.Fprintf(&conf, " neighbor %s remote-as %d\n neighbor %s timers connect 1\n", n.IP, nodeASN, n.IP)
	}
	conf.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n")
	for _, n := range cl.Nodes {
		fmt.Fprintf(&conf, "  neighbor %s activate\n", n.IP)
	}
	conf.WriteString(" exit-address-family\n")
	router := frr.StartT(t, frr.Options{Netns: cl.RouterHost.Netns, Dir: filepath.Join(work, "frr"), Name: "tor", Config: conf.String()})
	applyYAML(t, fmt.Sprintf(bgpFixtures, cl.RouterHost.IP))

	var addrs []string
	for _, n := range cl.Nodes {
		addrs = append(addrs, n.IP.String())
	}
	if _, err := router.WaitEstablished(ctxTimeout(t), addrs...); err != nil {
		t.Fatalf("BGP sessions with the agents: %v\n%s", err, router.LogTail(40))
	}
	ns := newNamespace(t, "bgp", nil)
	deployBackend(t, ns, "routed", 3, nil)
	_, vip := loadBalancer(t, ns, "routed", func(s *corev1.Service) { s.Labels = map[string]string{"bgp": "yes"} })
	if !netip.MustParsePrefix(routedPool).Contains(vip) {
		t.Fatalf("Service IP %s is not from the routed pool", vip)
	}
	route := netip.PrefixFrom(vip, 32)
	waitFor(t, timeout, func() (bool, string) {
		rib, err := router.RIB("ipv4")
		if err != nil {
			return false, err.Error()
		}
		var hops []string
		for _, p := range rib[route] {
			hops = append(hops, p.Peer().String())
		}
		return len(hops) == len(cl.Nodes), fmt.Sprintf("router's paths to %s: %v, want one per node", route, hops)
	})
	waitFor(t, timeout, func() (bool, string) {
		out, err := exec.Command("ip", "-n", cl.RouterHost.Netns, "route", "show", route.String()).CombinedOutput()
		return err == nil && strings.Count(string(out), "nexthop") == len(cl.Nodes),
			fmt.Sprintf("router's kernel route to %s: %q %v, want %d next hops", route, out, err, len(cl.Nodes))
	})
	waitFor(t, timeout, func() (bool, string) {
		out, err := exec.CommandContext(context.Background(), "ip", "netns", "exec", cl.RouterHost.Netns, "curl", "-sS", "--max-time", "2", "http://"+vip.String()+"/").CombinedOutput()
		return err == nil && strings.HasPrefix(string(out), "routed-"), fmt.Sprintf("curl from the router through %s: %s %v", vip, out, err)
	})
}
