package l2

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/test/cluster"
	"github.com/heraldlb/herald/test/netlab"
)

// The traffic path a cluster without Cilium has: the client resolves the
// VIP to the owner's MAC (Herald), the owner's kube-proxy DNATs the
// connection to a backend, on its node or another. Each node has one pod
// (a namespace behind it, test/netlab) running httpecho on port 8080, and
// runs the real kube-proxy (iptables mode) in its namespace. Services are
// selector-less, with EndpointSlices made here: there is no
// kube-controller-manager.

const backendPort = 8080

var (
	trafficOnce sync.Once
	trafficErr  error
	pods        = map[*node]*netlab.Pod{}
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
	bin := filepath.Join(workDir, "bin", "httpecho")
	build := exec.Command("go", "build", "-o", bin, "./test/netlab/cmd/httpecho")
	build.Dir = cluster.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building httpecho: %w\n%s", err, out)
	}
	for i, n := range nodes {
		p, err := lan.AddPod(n.Name, fmt.Sprintf("pod%d", i+1),
			netip.MustParsePrefix(fmt.Sprintf("198.18.%d.0/24", 11+i)),
			netip.MustParsePrefix(fmt.Sprintf("fd00:18:0:%d::/64", 11+i)))
		if err != nil {
			return err
		}
		pods[n] = p
		logf, err := os.Create(filepath.Join(workDir, n.Name, "httpecho.log"))
		if err != nil {
			return err
		}
		echo := exec.Command("ip", "netns", "exec", p.Netns, bin, "-listen", fmt.Sprintf(":%d", backendPort), "-name", "pod-"+n.Name)
		echo.Stdout, echo.Stderr = logf, logf
		if err := echo.Start(); err != nil {
			logf.Close()
			return err
		}
		atTeardown(func() { _ = echo.Process.Kill(); _ = echo.Wait(); logf.Close() })

		kp, err := testCluster.StartKubeProxy(cluster.KubeProxyOptions{
			Netns: n.host.Netns, Node: n.Name, HealthzIP: n.host.IP.String(), Dir: filepath.Join(workDir, n.Name),
		})
		if err != nil {
			return err
		}
		atTeardown(func() { _ = kp.Stop() })
	}
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
	addrType := discoveryv1.AddressTypeIPv4
	if family == corev1.IPv6Protocol {
		addrType = discoveryv1.AddressTypeIPv6
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:   name + "-pods",
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "herald-test"},
		},
		AddressType: addrType,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(backendPort)), Protocol: ptr.To(corev1.ProtocolTCP)}},
		Endpoints:   []discoveryv1.Endpoint{},
	}
	for _, n := range on {
		ip := pods[n].IP
		if family == corev1.IPv6Protocol {
			ip = pods[n].IP6
		}
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{ip.String()},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			NodeName:   ptr.To(n.Name),
		})
	}
	ctx := context.Background()
	api := kube.DiscoveryV1().EndpointSlices(s.ns)
	cur, err := api.Get(ctx, slice.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = api.Create(ctx, slice, metav1.CreateOptions{})
	case err == nil:
		slice.ResourceVersion = cur.ResourceVersion
		_, err = api.Update(ctx, slice, metav1.UpdateOptions{})
	}
	if err != nil {
		s.t.Fatalf("writing EndpointSlice %s/%s: %v", s.ns, slice.Name, err)
	}
}

// curl fetches http://vip/ from the client namespace with the real curl.
func curl(vip netip.Addr, timeout time.Duration) (string, error) {
	host := vip.String()
	if vip.Is6() {
		host = "[" + host + "]"
	}
	out, err := exec.Command("ip", "netns", "exec", clientHost.Netns, "curl", "-sS", "-g",
		"--max-time", fmt.Sprintf("%.1f", timeout.Seconds()), "http://"+host+"/").CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// waitServed waits until a request to vip reaches a backend and returns
// the answer.
func waitServed(t testing.TB, vip netip.Addr) string {
	t.Helper()
	var out string
	waitFor(t, func() (bool, string) {
		var err error
		out, err = curl(vip, time.Second)
		return err == nil && strings.HasPrefix(out, "pod-"), fmt.Sprintf("curl http://%s/: %v %q", vip, err, out)
	})
	return out
}

// expectServed waits until a request to vip reaches a backend (kube-proxy
// programs the VIP a moment after it appears in the Service's status),
// then curls it a few more times: each request must reach a backend. It
// returns the backends that answered.
func expectServed(t testing.TB, vip netip.Addr) []string {
	t.Helper()
	waitServed(t, vip)
	seen := map[string]bool{}
	for range 6 {
		out, err := curl(vip, 3*time.Second)
		if err != nil || !strings.HasPrefix(out, "pod-") {
			t.Fatalf("curl http://%s/ from the client: %v: %q", vip, err, out)
		}
		seen[strings.SplitN(out, ":", 2)[0]] = true
	}
	var out []string
	for b := range seen {
		out = append(out, b)
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
		for _, b := range expectServed(t, vip) {
			if b != "pod-"+want.Name {
				t.Fatalf("with externalTrafficPolicy Local, %s's pod served, want only %s's", b, want.Name)
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
