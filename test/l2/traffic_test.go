package l2

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/test/backends"
)

// The traffic path a cluster without Cilium has: the client resolves the
// VIP to the owner's MAC (Herald), the owner's kube-proxy DNATs the
// connection to a backend, on its node or another. Each node has one pod
// running httpecho on port 8080 and runs the real kube-proxy (iptables
// mode), see test/backends. Services are selector-less, with
// EndpointSlices made here: there is no kube-controller-manager.

const backendPort = 8080

var (
	trafficOnce sync.Once
	trafficErr  error
	traffic     *backends.Backends
)

// ensureTraffic sets up the pods, their backends and kube-proxy on every
// node, once per run; the suite's teardown removes them.
func ensureTraffic(t testing.TB) {
	t.Helper()
	trafficOnce.Do(func() { trafficErr = setupTraffic() })
	if trafficErr != nil {
		t.Fatal(trafficErr)
	}
}

func setupTraffic() error {
	names := make([]string, len(nodes))
	for i, n := range nodes {
		names[i] = n.Name
	}
	b, err := backends.Start(backends.Options{
		Cluster: testCluster,
		LAN:     lan,
		WorkDir: workDir,
		Nodes:   names,
		PodNet: func(i int) (netip.Prefix, netip.Prefix) {
			return netip.MustParsePrefix(fmt.Sprintf("198.18.%d.0/24", 11+i)),
				netip.MustParsePrefix(fmt.Sprintf("fd00:18:0:%d::/64", 11+i))
		},
		Port: backendPort,
	})
	if err != nil {
		return err
	}
	traffic = b
	atTeardown(b.Stop)
	return nil
}

// createBackedService creates a selector-less LoadBalancer Service of the
// family, port 80 to the pods' port 8080 (edit changes it before it is
// created), with an EndpointSlice listing the pod of every node.
func (s *scenario) createBackedService(name string, family corev1.IPFamily, edit func(*corev1.Service)) {
	s.t.Helper()
	s.createServiceWith(name, func(svc *corev1.Service) {
		singleStack(family)(svc)
		if edit != nil {
			edit(svc)
		}
	})
	s.setEndpoints(name, family, nodes...)
}

// setEndpoints makes the Service's EndpointSlice list the pods of the
// nodes, ready (creating it the first time).
func (s *scenario) setEndpoints(name string, family corev1.IPFamily, on ...*node) {
	s.t.Helper()
	names := make([]string, len(on))
	for i, n := range on {
		names[i] = n.Name
	}
	if err := traffic.SetEndpoints(context.Background(), kube, s.ns, name, family, names...); err != nil {
		s.t.Fatal(err)
	}
}

// curl fetches http://vip/ from the client namespace with the real curl.
func curl(vip netip.Addr, timeout time.Duration) (string, error) {
	return backends.Curl(clientHost.Netns, vip, timeout)
}

// waitServed waits until a request to vip reaches a backend and returns
// the answer.
func waitServed(t testing.TB, vip netip.Addr) string {
	t.Helper()
	var out string
	waitFor(t, func() (bool, string) {
		var err error
		out, err = curl(vip, time.Second)
		_, served := backends.ServedBy(out)
		return err == nil && served, fmt.Sprintf("curl http://%s/: %v %q", vip, err, out)
	})
	return out
}

// expectServed waits until a request to vip reaches a backend (kube-proxy
// programs the VIP a moment after it appears in the Service's status),
// then curls it a few more times: each request must reach a backend. It
// returns the nodes whose pods answered.
func expectServed(t testing.TB, vip netip.Addr) []string {
	t.Helper()
	waitServed(t, vip)
	seen := map[string]bool{}
	for range 6 {
		out, err := curl(vip, 3*time.Second)
		n, served := backends.ServedBy(out)
		if err != nil || !served {
			t.Fatalf("curl http://%s/ from the client: %v: %q", vip, err, out)
		}
		seen[n] = true
	}
	var out []string
	for n := range seen {
		out = append(out, n)
	}
	return out
}

// clientNeighbor returns the MAC of the client's neighbour entry for ip, or
// "" if it has none.
func clientNeighbor(t testing.TB, ip netip.Addr) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", clientHost.Netns, "neigh", "show", ip.String(), "dev", devName).CombinedOutput()
	if err != nil {
		t.Fatalf("ip neigh show %s in %s: %v: %s", ip, clientHost.Netns, err, out)
	}
	f := strings.Fields(string(out))
	for i := range f {
		if f[i] == "lladdr" && i+1 < len(f) {
			return f[i+1]
		}
	}
	return ""
}

// TestTrafficThroughVIP: a connection to the VIP reaches a backend through
// the owner's kube-proxy, for IPv4 and IPv6; after kill -9 of the owner's
// agent, requests succeed again once another node answers for the VIP.
func TestTrafficThroughVIP(t *testing.T) {
	ensureTraffic(t)
	s := newScenario(t)
	s.createPolicy("all", nil)
	s.createBackedService("web", corev1.IPv4Protocol, nil)
	s.createBackedService("web6", corev1.IPv6Protocol, nil)
	vip := s.waitVIP("web")
	vip6 := s.waitVIPIn("web6", poolCIDR6)

	for _, v := range []struct {
		svc string
		vip netip.Addr
	}{{"web", vip}, {"web6", vip6}} {
		owner := s.waitOwner(v.svc, v.vip)
		t.Logf("curl http://%s/ (owner %s) reached %v", v.vip, owner.Name, expectServed(t, v.vip))

		t0 := time.Now()
		if err := owner.Kill9(); err != nil {
			t.Fatal(err)
		}
		out := waitServed(t, v.vip)
		t.Logf("kill -9 of %s's agent: curl http://%s/ served again after %s (%q)", owner.Name, v.vip, time.Since(t0).Round(time.Millisecond), out)
		next := s.waitOwner(v.svc, v.vip, owner)
		// The killed agent's node still runs kube-proxy: until the client
		// learns the new MAC its traffic is served there. The new owner's
		// announcement updates the client's neighbour entry at once.
		waitFor(t, func() (bool, string) {
			mac := clientNeighbor(t, v.vip)
			return mac == next.host.MAC.String(), fmt.Sprintf("the client's neighbour entry for %s: %q, want %s", v.vip, mac, next.host.MAC)
		})
		t.Logf("%s answers for %s now, the client sends to it, traffic reached %v", next.Name, v.vip, expectServed(t, v.vip))
		ensureAgents(t)
	}
}

// TestExternalTrafficPolicyLocal: a Service with externalTrafficPolicy:
// Local is announced only by a node that runs a ready endpoint, and the
// backend sees the client's own address (no SNAT, the point of Local).
// When the owner's endpoint goes and another node has one, that node takes
// over; with none anywhere, nobody answers and the Service gets an Event
// saying why.
func TestExternalTrafficPolicyLocal(t *testing.T) {
	ensureTraffic(t)
	s := newScenario(t)
	s.createPolicy("all", nil)
	s.createBackedService("local", corev1.IPv4Protocol, func(svc *corev1.Service) {
		svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	})
	node1, node2, node3 := nodes[0], nodes[1], nodes[2]
	s.setEndpoints("local", corev1.IPv4Protocol, node2)
	vip := s.waitVIP("local")

	clientSeen := func(want *node) {
		t.Helper()
		for _, n := range expectServed(t, vip) {
			if n != want.Name {
				t.Fatalf("with externalTrafficPolicy Local, %s's pod served, want only %s's", n, want.Name)
			}
		}
		out, err := curl(vip, 3*time.Second)
		if err != nil || !strings.Contains(out, " from "+clientHost.IP.String()+":") {
			t.Fatalf("the backend must see the client's address %s: %v %q", clientHost.IP, err, out)
		}
		t.Logf("%s", out)
	}
	if owner := s.waitOwner("local", vip, node1, node3); owner != node2 {
		t.Fatalf("owner %s, want %s", owner.Name, node2.Name)
	}
	clientSeen(node2)

	t.Logf("the endpoint moves from %s to %s", node2.Name, node3.Name)
	s.setEndpoints("local", corev1.IPv4Protocol, node3)
	s.waitOwner("local", vip, node1, node2)
	waitWithdrawn(t, node2, vip)
	clientSeen(node3)

	t.Logf("no ready endpoint anywhere")
	s.setEndpoints("local", corev1.IPv4Protocol)
	for _, n := range nodes {
		waitWithdrawn(t, n, vip)
	}
	expectSilent(t, vip)
	waitFor(t, func() (bool, string) {
		events, err := kube.CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=local,reason=L2NotAnnounced",
		})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "externalTrafficPolicy is Local") {
				t.Logf("Event %s: %s (from %s)", e.Reason, e.Message, e.Source.Host)
				return true, ""
			}
		}
		return false, fmt.Sprintf("no L2NotAnnounced Event on %s/local yet (%d events)", s.ns, len(events.Items))
	})
}
