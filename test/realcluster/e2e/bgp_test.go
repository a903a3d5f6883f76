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
	"github.com/heraldlb/herald/test/realcluster"
)

// testBGP: FRR in the router namespace peers with every agent of the
// DaemonSet; a Service's IP from a pool off the LAN reaches the router as
// one route with a next hop per node (ECMP), and curl from the router
// through it reaches the pods.
func testBGP(t *testing.T) {
	router := frr.StartT(t, frr.Options{Netns: cl.RouterHost.Netns, Dir: filepath.Join(work, "frr"), Name: "tor", Config: cl.RouterConfig()})
	applyYAML(t, cl.BGPFixtures())

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
	if !netip.MustParsePrefix(realcluster.RoutedPool).Contains(vip) {
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
