package l2

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/arpwatch"
)

// Faults with many groups: a node's groups move by one takeover record per
// node and term (herald-l2-takeover-*), and the Leases catch up later.
// Each round checks on the wire that no request for a sample of the VIPs
// gets two MACs, and in the responders that every VIP ends up in exactly
// one of them.

// manyGroups is how many Services the fault tests announce: enough that
// the takeover record moves dozens of groups at once.
const manyGroups = 60

// TestMembersManyGroupsFaults (three nodes): kill -9, SIGSTOP and a
// partition of the node holding the most groups.
func TestMembersManyGroupsFaults(t *testing.T) {
	s := newScenario(t)
	vips := s.createManyServices(manyGroups)
	s.createPolicy("all", nil)
	waitSpread(t, vips, nodes)
	for _, f := range []fault{kill9, sigstop, cutOff} {
		victim := busiest(t, vips)
		takeoverRound(t, vips, victim, f, others(victim))
		waitMembersAlive(t, nodes)
		waitSpread(t, vips, nodes)
	}
	waitRecorded(t, s.ns, vips)
}

// TestMembersTwoNodes: node3's agent stopped (and its node Lease gone), two
// nodes are left, with no majority without each other. kill -9, SIGSTOP
// and a cut of one node from the other and the API server, on each side:
// the survivor takes the groups over once the other's witness record
// expired. And a cut between the two while both reach the API server:
// each keeps what it holds, nothing moves. Never two MACs for a request.
func TestMembersTwoNodes(t *testing.T) {
	pair := nodes[:2]
	s := newScenario(t)
	useTwoNodes(t)
	vips := s.createManyServices(manyGroups)
	s.createPolicy("all", nil)
	waitSpread(t, vips, pair)
	for _, r := range []struct {
		victim *node
		f      fault
	}{
		{pair[0], kill9}, {pair[1], kill9},
		{pair[0], sigstop}, {pair[1], sigstop},
		{pair[0], cutOff}, {pair[1], cutOff},
	} {
		takeoverRound(t, vips, r.victim, r.f, others2(r.victim, pair))
		waitMembersAlive(t, pair)
		waitSpread(t, vips, pair)
	}

	// Cut between the two, both reaching the API server: each renews its
	// witness record, so neither takes the other's groups.
	before := responderOwners(t)
	sample := sampleVIPs(vips, before, pair)
	start := client.Mark()
	probers := startProbers(sample)
	heal := dropIPTraffic(t, pair[0], "hl2cut", pair[1].host.IP.String())
	waitMembersDead(t, pair[0], pair[1])
	waitMembersDead(t, pair[1], pair[0])
	time.Sleep(3 * time.Second) // well past the witness expiry
	after := responderOwners(t)
	for name, vip := range vips {
		if !slices.Equal(before[vip], after[vip]) {
			t.Errorf("%s (%s) moved from %v to %v during a cut between two nodes that both reach the API server", name, vip, before[vip], after[vip])
		}
	}
	heal()
	waitMembersAlive(t, pair)
	stopProbers(t, probers, start)
	waitRecorded(t, s.ns, vips)

	// The node Leases and witness records go with their Node.
	for _, n := range pair {
		expectOwnedByNode(t, tables.L2NodeLeasePrefix+n.Name, n.Name)
		expectOwnedByNode(t, tables.L2WitnessLeasePrefix+n.Name, n.Name)
	}
}

// expectOwnedByNode fails the test unless the Lease names the Node as its
// owner, so that the Kubernetes garbage collector deletes it with the
// Node.
func expectOwnedByNode(t testing.TB, lease, node string) {
	t.Helper()
	ctx := context.Background()
	l, err := kube.CoordinationV1().Leases(leaseNS).Get(ctx, lease, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Lease %s: %v", lease, err)
	}
	n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("Node %s: %v", node, err)
	}
	for _, o := range l.OwnerReferences {
		if o.Kind == "Node" && o.APIVersion == "v1" && o.Name == node && o.UID == n.UID {
			return
		}
	}
	t.Errorf("Lease %s: owner references %+v, want Node %s (uid %s)", lease, l.OwnerReferences, node, n.UID)
}

// useTwoNodes stops node3's agent and deletes its node Lease, so that the
// other two count a cluster of two at once; node3 is back at the end.
func useTwoNodes(t testing.TB) {
	third := nodes[2]
	must(t, third.Stop())
	t.Cleanup(func() { ensureAgents(t) })
	err := kube.CoordinationV1().Leases(leaseNS).Delete(context.Background(), tables.L2NodeLeasePrefix+third.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	waitMembersDead(t, nodes[0], third)
	waitMembersDead(t, nodes[1], third)
}

// takeoverRound does f to victim while probing a sample of the VIPs, waits
// until every VIP the victim answered for is in exactly one responder of
// survivors, undoes f, and checks the wire.
func takeoverRound(t *testing.T, vips map[string]netip.Addr, victim *node, f fault, survivors []*node) {
	t.Helper()
	before := responderOwners(t)
	var held []netip.Addr
	for _, vip := range vips {
		if slices.Contains(before[vip], victim.Name) {
			held = append(held, vip)
		}
	}
	if len(held) == 0 {
		t.Fatalf("%s answers for none of the VIPs: %v", victim.Name, before)
	}
	sample := sampleVIPs(vips, before, append([]*node{victim}, survivors...))
	start := client.Mark()
	probers := startProbers(sample)
	f.apply(t, victim)
	waitFor(t, func() (bool, string) {
		owners := responderOwners(t)
		for _, vip := range held {
			var by []string
			for _, n := range owners[vip] {
				if n != victim.Name {
					by = append(by, n)
				}
			}
			if len(by) != 1 {
				return false, fmt.Sprintf("%s of %s is in the responders of %v", vip, victim.Name, by)
			}
		}
		return true, ""
	})
	t.Logf("%s of %s: its %d VIPs taken over by %v", f.name, victim.Name, len(held), names(survivors))
	f.recover(t, victim)
	stopProbers(t, probers, start)
}

// sampleVIPs is up to three VIPs of each of ns, as owners places them.
func sampleVIPs(vips map[string]netip.Addr, owners map[netip.Addr][]string, ns []*node) []netip.Addr {
	var out []netip.Addr
	for _, n := range ns {
		k := 0
		for _, name := range sortedKeys(vips) {
			if vip := vips[name]; k < 3 && slices.Contains(owners[vip], n.Name) {
				out = append(out, vip)
				k++
			}
		}
	}
	return out
}

type vipProber struct {
	vip netip.Addr
	p   *arpwatch.MarkedProber
}

func startProbers(vips []netip.Addr) []vipProber {
	var out []vipProber
	for _, vip := range vips {
		out = append(out, vipProber{vip, client.StartMarkedProber(vip, 20*time.Millisecond)})
	}
	return out
}

// stopProbers fails the test if any request was answered by two MACs.
func stopProbers(t *testing.T, probers []vipProber, start int) {
	t.Helper()
	for _, p := range probers {
		expectNoDoubleAnswers(t, p.vip, p.p, start)
	}
}

// waitSpread waits until every VIP is in exactly one responder, of one of
// ns.
func waitSpread(t testing.TB, vips map[string]netip.Addr, ns []*node) {
	t.Helper()
	waitFor(t, func() (bool, string) {
		owners := responderOwners(t)
		for name, vip := range vips {
			if len(owners[vip]) != 1 || !slices.Contains(names(ns), owners[vip][0]) {
				return false, fmt.Sprintf("%s (%s) is in the responders of %v", name, vip, owners[vip])
			}
		}
		return true, ""
	})
}

// busiest is the node that answers for the most VIPs.
func busiest(t testing.TB, vips map[string]netip.Addr) *node {
	owners := responderOwners(t)
	load := map[string]int{}
	for _, vip := range vips {
		for _, n := range owners[vip] {
			load[n]++
		}
	}
	var best *node
	for _, n := range nodes {
		if best == nil || load[n.Name] > load[best.Name] {
			best = n
		}
	}
	return best
}

// waitRecorded waits until every Lease names the node that answers, and
// no takeover record is left: the records only bridge the moment of a
// takeover.
func waitRecorded(t testing.TB, ns string, vips map[string]netip.Addr) {
	t.Helper()
	waitFor(t, func() (bool, string) {
		owners := responderOwners(t)
		leases, err := kube.CoordinationV1().Leases(leaseNS).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		holders := map[string]string{}
		for i := range leases.Items {
			name := leases.Items[i].Name
			if strings.HasPrefix(name, tables.L2TakeoverLeasePrefix) {
				return false, "takeover record " + name + " is still there"
			}
			holders[name] = holderOf(&leases.Items[i])
		}
		for name, vip := range vips {
			if len(owners[vip]) != 1 || holders[leaseName(ns, name)] != owners[vip][0] {
				return false, fmt.Sprintf("Lease of %s names %q, %v answer", name, holders[leaseName(ns, name)], owners[vip])
			}
		}
		return true, ""
	})
}

// ensureRunning starts those of ns whose agent is not running and waits
// until they are ready.
func ensureRunning(t testing.TB, ns []*node) {
	t.Helper()
	for _, n := range ns {
		if !n.Running() {
			must(t, n.Start())
		}
	}
	for _, n := range ns {
		must(t, n.waitReady())
	}
}

func others2(n *node, among []*node) []*node {
	var out []*node
	for _, o := range among {
		if o != n {
			out = append(out, o)
		}
	}
	return out
}

func sortedKeys(m map[string]netip.Addr) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
