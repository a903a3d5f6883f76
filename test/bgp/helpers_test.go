package bgp

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/frr"
)

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

// waitFor polls cond until it holds; on timeout the test fails with cond's
// last word, the agents' and FRR's logs.
func waitFor(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(100 * time.Millisecond)
	}
	var logs strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&logs, "----- log of agent %s -----\n%s\n", n.Name, n.Logs(40))
	}
	t.Fatalf("timed out waiting for %s: %s\n%s----- FRR -----\n%s", what, last, logs.String(), router.LogTail(40))
}

// newNamespace makes a namespace for one test and deletes it after.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := "hbgp-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 60 {
		name = name[:60]
	}
	name = strings.TrimRight(name, "-")
	if _, err := kube.CoreV1().Namespaces().Create(ctxT(t), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// No namespace controller runs: delete what the test made first.
		ctx := context.Background()
		svcs, _ := kube.CoreV1().Services(name).List(ctx, metav1.ListOptions{})
		for _, s := range svcs.Items {
			_ = kube.CoreV1().Services(name).Delete(ctx, s.Name, metav1.DeleteOptions{})
		}
		_ = kube.DiscoveryV1().EndpointSlices(name).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		_ = kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	})
	return name
}

// createService makes a selector-less LoadBalancer Service the shared
// advertisement selects; edit changes it first.
func createService(t *testing.T, ns, name string, edit func(*corev1.Service)) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{serviceLabel: "yes"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(backendPort), Protocol: corev1.ProtocolTCP}}},
	}
	if edit != nil {
		edit(svc)
	}
	if _, err := kube.CoreV1().Services(ns).Create(ctxT(t), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func singleStack(f corev1.IPFamily) func(*corev1.Service) {
	return func(s *corev1.Service) {
		s.Spec.IPFamilyPolicy = ptrTo(corev1.IPFamilyPolicySingleStack)
		s.Spec.IPFamilies = []corev1.IPFamily{f}
	}
}

func ptrTo[T any](v T) *T { return &v }

// waitVIP waits for the Service's first ingress IP.
func waitVIP(t *testing.T, ns, name string) netip.Addr {
	t.Helper()
	var vip netip.Addr
	waitFor(t, "an LB IP for "+ns+"/"+name, func() (bool, string) {
		svc, err := kube.CoreV1().Services(ns).Get(ctxT(t), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(ing.IP); err == nil {
				vip = a
				return true, ""
			}
		}
		return false, "no ingress IP yet"
	})
	return vip
}

func afiOf(a netip.Addr) string {
	if a.Is6() {
		return "ipv6"
	}
	return "ipv4"
}

func hostPrefix(a netip.Addr) netip.Prefix { return netip.PrefixFrom(a, a.BitLen()) }

// advertisedService creates the IPv4 Service name in a new namespace and
// waits until every node advertises its VIP; it returns the namespace and
// the VIP's host route.
func advertisedService(t *testing.T, name string) (ns string, p netip.Prefix) {
	t.Helper()
	ns = newNamespace(t)
	createService(t, ns, name, singleStack(corev1.IPv4Protocol))
	p = hostPrefix(waitVIP(t, ns, name))
	waitAdvertisedBy(t, p, nodes...)
	return ns, p
}

// sessionAddr is a node's address on the session of a's family: the
// router sees the node's paths from there.
func (n *node) sessionAddr(a netip.Addr) netip.Addr {
	if a.Is6() {
		return n.host.IP6
	}
	return n.host.IP
}

// peerIDs are the nodes' addresses on the sessions of a's family, sorted:
// FRR's peer IDs of their paths.
func peerIDs(a netip.Addr, ns ...*node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.sessionAddr(a).String())
	}
	slices.Sort(out)
	return out
}

// pathsOf returns FRR's paths of a prefix.
func pathsOf(p netip.Prefix) ([]frr.Path, error) {
	rib, err := router.RIB(afiOf(p.Addr()))
	if err != nil {
		return nil, err
	}
	return rib[p], nil
}

// describe renders paths for failure messages.
func describe(paths []frr.Path) string {
	var out []string
	for _, p := range paths {
		s := fmt.Sprintf("from %s via %s, AS path %q", p.PeerID, p.NextHop, p.ASPath)
		if p.Stale {
			s += " (stale)"
		}
		if p.Multipath {
			s += " (multipath)"
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "no paths"
	}
	return strings.Join(out, ", ")
}

// waitAdvertisedBy waits until FRR has exactly one path for the prefix
// from each of these nodes (none from the others), each with the node as
// next hop; with more than one node, every path is multipath (ECMP).
func waitAdvertisedBy(t *testing.T, p netip.Prefix, ns ...*node) []frr.Path {
	t.Helper()
	want := peerIDs(p.Addr(), ns...)
	var paths []frr.Path
	waitFor(t, fmt.Sprintf("%s advertised by exactly %v", p, want), func() (bool, string) {
		var ok bool
		var msg string
		paths, ok, msg = advertisedBy(p, ns...)
		return ok, msg
	})
	return paths
}

// advertisedBy reads FRR's paths of the prefix and says whether they are
// those waitAdvertisedBy waits for.
func advertisedBy(p netip.Prefix, ns ...*node) (paths []frr.Path, ok bool, msg string) {
	want := peerIDs(p.Addr(), ns...)
	paths, err := pathsOf(p)
	if err != nil {
		return nil, false, err.Error()
	}
	var got []string
	for _, path := range paths {
		if path.NextHop.String() != path.PeerID || path.Stale || (len(ns) > 1 && !path.Multipath) {
			return paths, false, describe(paths)
		}
		got = append(got, path.PeerID)
	}
	slices.Sort(got)
	return paths, slices.Equal(got, want), describe(paths)
}

// waitWithdrawn waits until FRR has no path for the prefix.
func waitWithdrawn(t *testing.T, p netip.Prefix) {
	t.Helper()
	waitAdvertisedBy(t, p)
}

// waitKernelECMP waits for the router's kernel route to the prefix with
// one next hop per node.
func waitKernelECMP(t *testing.T, p netip.Prefix, ns ...*node) {
	t.Helper()
	want := peerIDs(p.Addr(), ns...)
	waitFor(t, fmt.Sprintf("kernel route %s via %v", p, want), func() (bool, string) {
		r, ok, err := router.KernelRoute(p)
		if err != nil || !ok {
			return false, fmt.Sprint("no route: ", err)
		}
		var got []string
		for _, nh := range r.NextHops {
			got = append(got, nh.Gateway.String())
		}
		slices.Sort(got)
		return slices.Equal(got, want), fmt.Sprintf("%+v", r)
	})
}

// agents returns the nodes' agents.
func agents() []*agentproc.Agent {
	var out []*agentproc.Agent
	for _, n := range nodes {
		out = append(out, n.Agent)
	}
	return out
}

// restartAgentsWith restarts every node's agent with the extra flags for
// the rest of the test, and as the suite runs them when it ends.
func restartAgentsWith(t *testing.T, flags ...string) {
	t.Helper()
	agentproc.RestartWith(t, agents(), func(t testing.TB) { ensureAgents(t) }, flags...)
}

// ensureAgents restarts an agent a failed test left dead.
func ensureAgents(t testing.TB) {
	t.Helper()
	for _, n := range nodes {
		if !n.Running() {
			if err := n.Start(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// dbgTable reads one of an agent's tables.
func dbgTable[T any](t *testing.T, n *node, table string) []T {
	t.Helper()
	rows, err := agentproc.Table[T](n.Agent, table)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func deleteService(t *testing.T, ns, name string) {
	t.Helper()
	if err := kube.CoreV1().Services(ns).Delete(ctxT(t), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// ip runs `ip -n <n's namespace> args...`.
func (n *node) ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", append([]string{"-n", n.host.Netns}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("ip -n %s %v: %v: %s", n.host.Netns, args, err, out)
	}
}

// addLocalDevice gives n a device named dev holding prefixes (and IPv6),
// up: a veth pair within the node, whose other end is dev+"-p" (the
// kernel here has no dummy devices). The test's end removes it.
func (n *node) addLocalDevice(t *testing.T, dev string, prefixes ...netip.Prefix) {
	t.Helper()
	n.ip(t, "link", "add", dev, "type", "veth", "peer", "name", dev+"-p")
	t.Cleanup(func() { _ = exec.Command("ip", "-n", n.host.Netns, "link", "del", dev).Run() })
	// New devices of the node's namespace start with IPv6 off.
	if out, err := exec.Command("ip", "netns", "exec", n.host.Netns, "sysctl", "-qw", "net.ipv6.conf."+dev+".disable_ipv6=0").CombinedOutput(); err != nil {
		t.Fatalf("enabling IPv6 on %s: %v: %s", dev, err, out)
	}
	for _, p := range prefixes {
		n.ip(t, "addr", "add", p.String(), "dev", dev, "nodad")
	}
	n.ip(t, "link", "set", dev, "up")
	n.ip(t, "link", "set", dev+"-p", "up")
}
