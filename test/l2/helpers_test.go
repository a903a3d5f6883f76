package l2

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
	"github.com/heraldlb/herald/test/arpwatch"
	"github.com/heraldlb/herald/test/suite"
)

// Names the spec and the agent share with these tests.
const (
	leasePrefix = "cilium-l2announce-" // + <namespace>-<service>
	testLabel   = "hl2-test"           // on each test's Services and in its policies' serviceSelector
)

// silence is how long the tests watch, probing, that nobody answers when
// nobody may: a few lease durations, so that any node that would wrongly
// take over has had every chance to.
const silence = 4 * leaseDuration

// ---------------------------------------------------------------------------
// Waiting
// ---------------------------------------------------------------------------

// waitFor polls cond until it reports true. On timeout the test fails with
// cond's last description of what it saw and a dump of the agents' state.
func waitFor(t testing.TB, cond func() (bool, string)) {
	t.Helper()
	suite.WaitFor(t, timeout, cond, deadAgents)
}

// deadAgents describes agents that exited without being asked to.
func deadAgents() string { return agentproc.UnexpectedExits(agents()...) }

// ---------------------------------------------------------------------------
// Scenario: a test's namespace, Services, policies and node labels
// ---------------------------------------------------------------------------

type scenario struct {
	t     *testing.T
	ns    string
	label string // value of testLabel on the scenario's Services
	start int    // capture position when the test started
	logs  map[*node]agentproc.LogMark

	policies []string
	vips     []netip.Addr // for the failure dump
	restore  []func()     // node label changes to undo
}

// newScenario makes sure the three agents run (restarting any an earlier
// test left dead), and creates the test's namespace. Everything the test
// creates is deleted when it ends; on failure the agents' logs of the test
// and a dump of their state are printed.
func newScenario(t *testing.T) *scenario {
	t.Helper()
	ensureAgents(t)
	s := &scenario{t: t, start: client.Mark(), logs: map[*node]agentproc.LogMark{}}
	for _, n := range nodes {
		s.logs[n] = n.Mark()
	}
	ns, err := kube.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	s.ns, s.label = ns.Name, ns.Name
	t.Cleanup(s.cleanup)
	return s
}

// ensureAgents starts the agents that are not running and waits until all
// are ready.
func ensureAgents(t testing.TB) {
	t.Helper()
	for _, n := range nodes {
		if n.Running() {
			continue
		}
		if err := n.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		if err := n.waitReady(); err != nil {
			t.Fatal(err)
		}
	}
}

func (s *scenario) cleanup() {
	t := s.t
	if t.Failed() {
		t.Logf("state at failure:\n%s", dumpState(s.vips, s.start))
		printLogs(t, s.logs)
	}
	ctx := context.Background()
	for _, name := range s.policies {
		err := herald.CiliumV2alpha1().CiliumL2AnnouncementPolicies().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting policy %s: %v", name, err)
		}
	}
	svcs := kube.CoreV1().Services(s.ns)
	if list, err := svcs.List(ctx, metav1.ListOptions{}); err == nil {
		for _, svc := range list.Items {
			if err := svcs.Delete(ctx, svc.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting service %s/%s: %v", s.ns, svc.Name, err)
			}
		}
	}
	for i := len(s.restore) - 1; i >= 0; i-- {
		s.restore[i]()
	}
	// Without kube-controller-manager the namespace stays Terminating;
	// its name is unique anyway.
	_ = kube.CoreV1().Namespaces().Delete(ctx, s.ns, metav1.DeleteOptions{})
	// Leave three running agents to the next test.
	ensureAgents(t)
}

// createService creates a LoadBalancer Service labelled for the scenario's
// policies.
func (s *scenario) createService(name string) { s.createServiceWith(name, nil) }

// createServiceWith creates a LoadBalancer Service labelled for the
// scenario's policies, port 80; edit changes it before it is created.
func (s *scenario) createServiceWith(name string, edit func(*corev1.Service)) {
	s.t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{testLabel: s.label}},
		Spec: corev1.ServiceSpec{
			Type:  corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}},
		},
	}
	if edit != nil {
		edit(svc)
	}
	if _, err := kube.CoreV1().Services(s.ns).Create(context.Background(), svc, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("creating service %s/%s: %v", s.ns, name, err)
	}
}

// singleStack makes a Service single-stack of the family.
func singleStack(family corev1.IPFamily) func(*corev1.Service) {
	return func(svc *corev1.Service) {
		svc.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicySingleStack)
		svc.Spec.IPFamilies = []corev1.IPFamily{family}
	}
}

func (s *scenario) deleteService(name string) {
	s.t.Helper()
	if err := kube.CoreV1().Services(s.ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		s.t.Fatalf("deleting service %s/%s: %v", s.ns, name, err)
	}
}

// waitVIP waits until LB IPAM gave the Service an IPv4 address from the
// pool and returns it.
func (s *scenario) waitVIP(name string) netip.Addr {
	s.t.Helper()
	return s.waitVIPIn(name, poolCIDR)
}

// waitVIPIn waits until LB IPAM gave the Service an address of the pool's
// block cidr and returns it.
func (s *scenario) waitVIPIn(name, cidr string) netip.Addr {
	s.t.Helper()
	pool := netip.MustParsePrefix(cidr)
	var vip netip.Addr
	waitFor(s.t, func() (bool, string) {
		svc, err := kube.CoreV1().Services(s.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var ips []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			ips = append(ips, in.IP)
			if a, err := netip.ParseAddr(in.IP); err == nil && pool.Contains(a) {
				vip = a
				return true, ""
			}
		}
		return false, fmt.Sprintf("service %s/%s: ingress %v, want an address of %s", s.ns, name, ips, cidr)
	})
	s.vips = append(s.vips, vip)
	s.t.Logf("service %s/%s has VIP %s", s.ns, name, vip)
	return vip
}

// policySpec is the spec's example policy, selecting the scenario's
// Services: LoadBalancer IPs on ^eth[0-9]+, every node.
func (s *scenario) policySpec() v2alpha1.CiliumL2AnnouncementPolicySpec {
	return v2alpha1.CiliumL2AnnouncementPolicySpec{
		ServiceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{testLabel: s.label}},
		Interfaces:      []string{"^eth[0-9]+"},
		LoadBalancerIPs: true,
	}
}

// createPolicy creates a CiliumL2AnnouncementPolicy (cluster-scoped, named
// after the scenario) from policySpec changed by edit.
func (s *scenario) createPolicy(suffix string, edit func(*v2alpha1.CiliumL2AnnouncementPolicySpec)) string {
	s.t.Helper()
	p := &v2alpha1.CiliumL2AnnouncementPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: s.label + "-" + suffix},
		Spec:       s.policySpec(),
	}
	if edit != nil {
		edit(&p.Spec)
	}
	if _, err := herald.CiliumV2alpha1().CiliumL2AnnouncementPolicies().Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		s.t.Fatalf("creating policy %s: %v", p.Name, err)
	}
	s.policies = append(s.policies, p.Name)
	return p.Name
}

// updatePolicy changes a policy's spec.
func (s *scenario) updatePolicy(name string, edit func(*v2alpha1.CiliumL2AnnouncementPolicySpec)) {
	s.t.Helper()
	policies := herald.CiliumV2alpha1().CiliumL2AnnouncementPolicies()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := policies.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		edit(&p.Spec)
		_, err = policies.Update(context.Background(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		s.t.Fatalf("updating policy %s: %v", name, err)
	}
}

// setNodeLabel sets (value != "") or removes (value == "") a label of a
// Node; the change is undone when the test ends.
func (s *scenario) setNodeLabel(n *node, key, value string) {
	s.t.Helper()
	patch := func(v *string) error {
		b := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, key)
		if v != nil {
			b = fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, *v)
		}
		_, err := kube.CoreV1().Nodes().Patch(context.Background(), n.Name, types.MergePatchType, []byte(b), metav1.PatchOptions{})
		return err
	}
	old, err := kube.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatalf("getting Node %s: %v", n.Name, err)
	}
	var v *string
	if value != "" {
		v = &value
	}
	if err := patch(v); err != nil {
		s.t.Fatalf("labelling Node %s: %v", n.Name, err)
	}
	var prev *string
	if ov, ok := old.Labels[key]; ok {
		prev = &ov
	}
	s.restore = append(s.restore, func() {
		if err := patch(prev); err != nil {
			s.t.Errorf("restoring label %s of Node %s: %v", key, n.Name, err)
		}
	})
}

// ---------------------------------------------------------------------------
// Leases
// ---------------------------------------------------------------------------

func leaseName(ns, svc string) string { return leasePrefix + ns + "-" + svc }

// lease returns the Service's announcement Lease, nil if there is none.
func (s *scenario) lease(svc string) (*coordinationv1.Lease, error) {
	l, err := kube.CoordinationV1().Leases(leaseNS).Get(context.Background(), leaseName(s.ns, svc), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return l, err
}

func holderOf(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func nodeNamed(name string) *node {
	for _, n := range nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// onlyOn is a policy edit: the policy selects node n alone.
func onlyOn(n *node) func(*v2alpha1.CiliumL2AnnouncementPolicySpec) {
	return func(spec *v2alpha1.CiliumL2AnnouncementPolicySpec) {
		spec.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"hl2.test/node": n.Name}}
	}
}

// announceWeb creates the Service "web" under a policy every node
// matches, waits for its VIP and for the node that owns it, checks that
// this owner alone answers for it, and returns both.
func (s *scenario) announceWeb() (netip.Addr, *node) {
	s.t.Helper()
	s.createPolicy("all", nil)
	s.createService("web")
	vip := s.waitVIP("web")
	owner := s.waitOwner("web", vip)
	expectAnsweredOnlyBy(s.t, vip, owner)
	return vip, owner
}

// waitOwnedBy waits for the node that owns the Service, among the nodes
// but the excluded ones; it must be n, the one node the policy selects,
// and n alone must answer for vip.
func (s *scenario) waitOwnedBy(svc string, vip netip.Addr, n *node, exclude ...*node) {
	s.t.Helper()
	if owner := s.waitOwner(svc, vip, exclude...); owner != n {
		s.t.Fatalf("%s holds the Lease, but the policy selects only %s", owner.Name, n.Name)
	}
	expectAnsweredOnlyBy(s.t, vip, n)
}

// waitOwner waits until a node other than the excluded ones holds the
// Service's Lease and has programmed the VIP on eth0, and returns it.
func (s *scenario) waitOwner(svc string, vip netip.Addr, exclude ...*node) *node {
	s.t.Helper()
	var owner *node
	waitFor(s.t, func() (bool, string) {
		l, err := s.lease(svc)
		if err != nil {
			return false, err.Error()
		}
		holder := holderOf(l)
		n := nodeNamed(holder)
		if n == nil || slices.Contains(exclude, n) {
			return false, fmt.Sprintf("Lease %s/%s: holder %q, want one of the nodes but %v", leaseNS, leaseName(s.ns, svc), holder, names(exclude))
		}
		if msg := announcedOn(n, vip); msg != "" {
			return false, msg
		}
		owner = n
		return true, ""
	})
	s.t.Logf("%s holds Lease %s and announces %s", owner, leaseName(s.ns, svc), vip)
	return owner
}

// announcedOn returns "" if n's l2-announce table has exactly the row
// (vip, eth0) with n's MAC and ifindex, reconciled; else what it has.
func announcedOn(n *node, vip netip.Addr) string {
	rows, err := n.announced(vip)
	if err != nil {
		return err.Error()
	}
	if len(rows) != 1 {
		return fmt.Sprintf("%s: %d l2-announce rows for %s, want 1 (on %s)", n.Name, len(rows), vip, devName)
	}
	e := rows[0]
	if e.NetworkInterface != devName || e.Ifindex != n.eth0Index() || e.MAC != n.host.MAC.String() || !isDone(e) {
		return fmt.Sprintf("%s: l2-announce row %s %s ifindex %d MAC %s status %s; want %s ifindex %d MAC %s, Done",
			n.Name, e.IP, e.NetworkInterface, e.Ifindex, e.MAC, e.Status.Kind, devName, n.eth0Index(), n.host.MAC)
	}
	return ""
}

func names(ns []*node) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Name)
	}
	return out
}

// ---------------------------------------------------------------------------
// What the LAN sees
// ---------------------------------------------------------------------------

// probe asks who has vip once; a malformed reply fails the test.
func probe(t testing.TB, vip netip.Addr) arpwatch.ProbeResult {
	t.Helper()
	res, err := client.Probe(vip)
	if err != nil {
		t.Fatalf("%v\n%s", err, res)
	}
	return res
}

// confirmations is how many requests in a row must get the expected answer.
const confirmations = 5

// expectAnsweredOnlyBy waits until a request for vip is answered by n, and
// by n alone, then checks that the next requests are too: each gets exactly
// one reply, carrying n's MAC.
func expectAnsweredOnlyBy(t testing.TB, vip netip.Addr, n *node) {
	t.Helper()
	want := []string{n.host.MAC.String()}
	waitFor(t, func() (bool, string) {
		res := probe(t, vip)
		return slices.Equal(res.MACs(), want), fmt.Sprintf("want a reply from %s only; %s", n, res)
	})
	for i := 0; i < confirmations; i++ {
		res := probe(t, vip)
		if len(res.Replies) != 1 || !slices.Equal(res.MACs(), want) {
			t.Fatalf("request %d after %s first answered alone: want exactly one reply, from %s; %s", i+1, n.Name, n, res)
		}
	}
}

// expectSilent waits until requests for vip go unanswered, several in a row.
func expectSilent(t testing.TB, vip netip.Addr) {
	t.Helper()
	quiet := 0
	waitFor(t, func() (bool, string) {
		res := probe(t, vip)
		if len(res.Replies) == 0 {
			quiet++
		} else {
			quiet = 0
		}
		return quiet >= confirmations, fmt.Sprintf("want no reply, %d times in a row; %s", confirmations, res)
	})
}

// assertSilentFor probes vip for d: no request may be answered.
func assertSilentFor(t testing.TB, vip netip.Addr, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); {
		if res := probe(t, vip); len(res.Replies) != 0 {
			t.Fatalf("nobody may answer for %s, yet: %s", vip, res)
		}
	}
}

// waitGratuitous waits for a gratuitous ARP for vip from n, captured from
// position since on.
func waitGratuitous(t testing.TB, vip netip.Addr, n *node, since int) {
	t.Helper()
	waitFor(t, func() (bool, string) {
		frames, err := client.Since(since)
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, f := range frames {
			if f.Gratuitous(vip) {
				if f.SHA.String() == n.host.MAC.String() {
					return true, ""
				}
				seen = append(seen, f.String())
			}
		}
		return false, fmt.Sprintf("no gratuitous ARP for %s from %s; other gratuitous ARP for it: %v", vip, n, seen)
	})
}

// assertNeverSpokeFor fails the test if any of the nodes replied to a
// request for vip or announced it, in the capture between positions from
// and to (to < 0: up to now). Meanwhile replies of other nodes are counted
// too, to show whether two nodes were answering at once.
func assertNeverSpokeFor(t testing.TB, vip netip.Addr, from, to int, ns ...*node) {
	t.Helper()
	frames, err := client.Since(from)
	if err != nil {
		t.Fatal(err)
	}
	type seen struct {
		n           int
		first, last arpwatch.ARPFrame
	}
	bySender := map[string]*seen{}
	var order []string
	for _, f := range frames {
		if to >= 0 && f.Seq >= to {
			break
		}
		if !f.About(vip) {
			continue
		}
		mac := f.SHA.String()
		x := bySender[mac]
		if x == nil {
			x = &seen{first: f}
			bySender[mac] = x
			order = append(order, mac)
		}
		x.n++
		x.last = f
	}
	var bad []string
	for _, n := range ns {
		if x := bySender[n.host.MAC.String()]; x != nil {
			bad = append(bad, fmt.Sprintf("%s spoke for %s %d times, first %s, last %s", n.Name, vip, x.n, x.first, x.last))
		}
	}
	if len(bad) == 0 {
		return
	}
	var all []string
	for _, mac := range order {
		x := bySender[mac]
		who := mac
		for _, n := range nodes {
			if n.host.MAC.String() == mac {
				who = n.Name
			}
		}
		all = append(all, fmt.Sprintf("%s: %d frames from %s to %s", who, x.n, x.first.At.Format("15:04:05.000"), x.last.At.Format("15:04:05.000")))
	}
	t.Errorf("must not speak for %s, yet:\n  %s\nall replies and announcements for it in that part of the capture:\n  %s",
		vip, strings.Join(bad, "\n  "), strings.Join(all, "\n  "))
}

// arping asks for vip with iputils' arping from the client namespace, count
// requests, and returns the distinct MACs that replied (lower case).
func arping(t testing.TB, vip netip.Addr, count int) []string {
	t.Helper()
	if _, err := exec.LookPath("arping"); err != nil {
		t.Fatalf("arping not installed (iputils-arping): run install/dev/ensure-tools.sh")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", clientHost.Netns,
		"arping", "-I", devName, "-c", strconv.Itoa(count), "-w", "10", vip.String()).CombinedOutput()
	var macs []string
	for _, line := range strings.Split(string(out), "\n") {
		// Unicast reply from 198.18.0.192 [02:48:4C:32:00:0D]  0.612ms
		if !strings.HasPrefix(line, "Unicast reply from ") {
			continue
		}
		_, rest, _ := strings.Cut(line, "[")
		mac, _, ok := strings.Cut(rest, "]")
		if m := strings.ToLower(mac); ok && !slices.Contains(macs, m) {
			macs = append(macs, m)
		}
	}
	slices.Sort(macs)
	if len(macs) == 0 {
		t.Errorf("arping %s from %s: no reply (%v):\n%s", vip, clientHost.Netns, err, out)
	}
	return macs
}

// ---------------------------------------------------------------------------
// Agent state
// ---------------------------------------------------------------------------

// waitMapEntry waits until n's pinned responder map (l2_responder_v4 or _v6) has exactly one
// entry for vip: on eth0, with n's MAC. It returns it.
func waitMapEntry(t testing.TB, n *node, vip netip.Addr) mapEntry {
	t.Helper()
	var got mapEntry
	waitFor(t, func() (bool, string) {
		entries, err := n.mapEntriesFor(vip)
		if err != nil {
			return false, err.Error()
		}
		if len(entries) != 1 || entries[0].Ifindex != n.eth0Index() || entries[0].MAC.String() != n.host.MAC.String() {
			return false, fmt.Sprintf("%s: %s entries for %s: %v; want one, ifindex %d, MAC %s", n.Name, "responder map", vip, entries, n.eth0Index(), n.host.MAC)
		}
		got = entries[0]
		return true, ""
	})
	return got
}

// waitWithdrawn waits until n has neither an l2-announce row nor a map
// entry for vip.
func waitWithdrawn(t testing.TB, n *node, vip netip.Addr) {
	t.Helper()
	waitFor(t, func() (bool, string) {
		rows, err := n.announced(vip)
		if err != nil {
			return false, err.Error()
		}
		if len(rows) != 0 {
			return false, fmt.Sprintf("%s: still %d l2-announce rows for %s", n.Name, len(rows), vip)
		}
		entries, err := n.mapEntriesFor(vip)
		if err != nil {
			return false, err.Error()
		}
		return len(entries) == 0, fmt.Sprintf("%s: responder map still has %v", n.Name, entries)
	})
}

// assertNotAnnounced checks now that the nodes have no row and no map entry
// for vip.
func assertNotAnnounced(t testing.TB, vip netip.Addr, ns ...*node) {
	t.Helper()
	for _, n := range ns {
		rows, err := n.announced(vip)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 0 {
			t.Errorf("%s must not announce %s, yet its l2-announce table has %d rows for it", n.Name, vip, len(rows))
		}
		entries, err := n.mapEntriesFor(vip)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 0 {
			t.Errorf("%s must not answer for %s, yet its responder map has %v", n.Name, vip, entries)
		}
	}
}

// others returns the nodes but n.
func others(n *node) []*node {
	return slices.DeleteFunc(slices.Clone(nodes), func(x *node) bool { return x == n })
}

// dumpState renders what every agent has, the announcement Leases and the
// ARP frames about the vips captured since position since, for failure
// messages.
func dumpState(vips []netip.Addr, since int) string {
	var b strings.Builder
	for _, n := range nodes {
		fmt.Fprintf(&b, "== %s: agent running=%v pid=%d\n", n, n.Running(), n.PID())
		if !n.Running() {
			continue
		}
		if out, err := n.Dbg("statedb", "l2-announce"); err == nil {
			fmt.Fprintf(&b, "herald-dbg statedb l2-announce:\n%s", out)
		} else {
			fmt.Fprintln(&b, err)
		}
		for _, table := range []string{"l2-policies", "l2-owners", "l2-members", "l2-member-meta"} {
			if out, err := n.Dbg("statedb", table); err == nil {
				fmt.Fprintf(&b, "herald-dbg statedb %s:\n%s", table, out)
			}
		}
		if entries, err := n.mapEntries(); err == nil {
			fmt.Fprintf(&b, "responder maps: %v\n", entries)
		} else {
			fmt.Fprintln(&b, err)
		}
	}
	if leases, err := kube.CoordinationV1().Leases(leaseNS).List(context.Background(), metav1.ListOptions{}); err == nil {
		fmt.Fprintln(&b, "== Leases:")
		for _, l := range leases.Items {
			var renew string
			if l.Spec.RenewTime != nil {
				renew = l.Spec.RenewTime.Format(time.RFC3339Nano)
			}
			trans := int32(0)
			if l.Spec.LeaseTransitions != nil {
				trans = *l.Spec.LeaseTransitions
			}
			fmt.Fprintf(&b, "%s holder=%q term=%q renewed=%s transitions=%d version=%s", l.Name, holderOf(&l),
				l.Annotations[tables.L2TermAnnotation], renew, trans, l.ResourceVersion)
			if to, ok := l.Annotations[tables.L2TakeoverAnnotation]; ok {
				fmt.Fprintf(&b, " takeover=%s", to)
			}
			fmt.Fprintln(&b)
		}
	}
	frames, _ := client.Since(since)
	var about []string
	for _, f := range frames {
		for _, vip := range vips {
			if f.SPA == vip || f.TPA == vip {
				about = append(about, f.String())
				break
			}
		}
	}
	fmt.Fprintf(&b, "== ARP frames about %v during the test (last 60 of %d):\n%s\n", vips, len(about), agentproc.Tail(strings.Join(about, "\n"), 60))
	return b.String()
}

// expectNoDoubleAnswers stops the prober and fails the test if a request of the prober was
// answered by two MACs.
func expectNoDoubleAnswers(t *testing.T, vip netip.Addr, prober *arpwatch.MarkedProber, start int) {
	t.Helper()
	marks, frames, err := prober.Finish(start)
	if err != nil {
		t.Fatal(err)
	}
	windows, doubles := client.DoubleAnswers(frames, vip, marks)
	if len(doubles) > 0 {
		t.Errorf("%d of %d requests answered by two MACs:\n  %s", len(doubles), windows, strings.Join(doubles, "\n  "))
	}
	t.Logf("%d requests, each answered by at most one MAC", windows)
}

// createPool creates the LB IPAM pool name of cidr for the Services
// labelled testLabel=value. The caller deletes it, in the order its
// cleanup needs.
func createPool(tb testing.TB, name, value, cidr string) {
	tb.Helper()
	pool := &v2alpha1.CiliumLoadBalancerIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v2alpha1.CiliumLoadBalancerIPPoolSpec{
			ServiceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{testLabel: value}},
			Blocks:          []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: cidr}},
		},
	}
	if _, err := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Create(context.Background(), pool, metav1.CreateOptions{}); err != nil {
		tb.Fatalf("creating pool %s: %v", name, err)
	}
}
