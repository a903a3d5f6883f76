package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/heraldlb/herald/test/backends"
)

// The traffic path of a routed cluster without Cilium: the router sends a
// connection for the VIP to one of the nodes that advertise it (ECMP), the
// node's kube-proxy DNATs it to a backend on that node or another. Each
// node has one pod running httpecho (test/backends); Services are
// selector-less with EndpointSlices written here (no
// kube-controller-manager runs).

const backendPort = 8080

var (
	trafficOnce sync.Once
	trafficErr  error
	pods        *backends.Backends
)

// ensureTraffic starts the pods and kube-proxy on every node, once per run.
// kube-proxy runs in nftables mode here (test/l2 runs it in iptables mode),
// so that both modes carry traffic to a Herald VIP in make test.
func ensureTraffic(t *testing.T) {
	t.Helper()
	trafficOnce.Do(func() {
		var names []string
		for _, n := range nodes {
			names = append(names, n.Name)
		}
		pods, trafficErr = backends.Start(backends.Options{
			Cluster: testCluster, LAN: lan, WorkDir: workDir, Nodes: names, Port: backendPort, KubeProxyMode: "nftables",
			PodNet: func(i int) (netip.Prefix, netip.Prefix) {
				return netip.MustParsePrefix(fmt.Sprintf("198.18.%d.0/24", 50+i)), netip.MustParsePrefix(fmt.Sprintf("fd00:18:0:%d::/64", 50+i))
			},
		})
		if trafficErr == nil {
			atTeardown(pods.Stop)
		}
	})
	if trafficErr != nil {
		t.Fatal(trafficErr)
	}
}

// waitServedFromRouter curls the VIP from the router's namespace until a
// backend answers, and returns the answer.
func waitServedFromRouter(t *testing.T, vip netip.Addr) string {
	t.Helper()
	var out string
	waitFor(t, fmt.Sprintf("curl http://%s/ from the router", vip), func() (bool, string) {
		var err error
		out, err = backends.Curl(routerHost.Netns, vip, time.Second)
		_, ok := backends.ServedBy(out)
		return err == nil && ok, fmt.Sprintf("%v %q", err, out)
	})
	return out
}

// A curl from the router to the VIP reaches a backend through whichever
// node the router picks, IPv4 and IPv6; with externalTrafficPolicy: Local
// only the node with the endpoint advertises, and the backend sees the
// router's own address (no SNAT: the point of Local).
func TestTrafficThroughVIP(t *testing.T) {
	ensureAgents(t)
	ensureTraffic(t)
	ns := newNamespace(t)
	all := []string{"node1", "node2", "node3"}
	for _, fam := range []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol} {
		name := "web" + strings.ToLower(string(fam))
		createService(t, ns, name, singleStack(fam))
		if err := pods.SetEndpoints(context.Background(), kube, ns, name, fam, all...); err != nil {
			t.Fatal(err)
		}
		vip := waitVIP(t, ns, name)
		waitAdvertisedBy(t, hostPrefix(vip), nodes...)
		for range 5 {
			waitServedFromRouter(t, vip)
		}
	}

	createService(t, ns, "local", func(s *corev1.Service) {
		singleStack(corev1.IPv4Protocol)(s)
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	})
	if err := pods.SetEndpoints(context.Background(), kube, ns, "local", corev1.IPv4Protocol, "node2"); err != nil {
		t.Fatal(err)
	}
	vip := waitVIP(t, ns, "local")
	waitAdvertisedBy(t, hostPrefix(vip), nodes[1])
	out := waitServedFromRouter(t, vip)
	if node, _ := backends.ServedBy(out); node != "node2" || !strings.Contains(out, "from "+routerHost.IP.String()+":") {
		t.Errorf("answer %q: want node2's pod, seeing the router's address %s", out, routerHost.IP)
	}
}
