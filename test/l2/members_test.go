package l2

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/arpwatch"
)

// useLeaseElection restarts every agent with the Lease election (a Lease
// per Service, the spec's) for one test, and with the suite's flags (the
// default, members election) again after it.
func useLeaseElection(t *testing.T) {
	t.Helper()
	if err := restartAgents(func(*node) []string { return []string{"--l2-announcements-election=lease"} }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := restartAgents(func(*node) []string { return nil }); err != nil {
			t.Error(err)
		}
	})
}

// The owner is killed (kill -9), and the new one frozen (SIGSTOP); another
// node takes over each time, the group stays where it is when the old
// owner comes back (placement is sticky), and no request is ever answered
// by two MACs.
func TestMembersFailover(t *testing.T) {
	s := newScenario(t)
	vip, placed := s.announceWeb()
	// herald-dbg says who answers and why, on the owner and elsewhere.
	for _, n := range nodes {
		out, err := n.Dbg("explain", "service", s.ns+"/web")
		if err != nil {
			t.Fatalf("herald-dbg explain on %s: %v: %s", n.Name, err, out)
		}
		want := "Owner by placement among the live candidates: " + placed.Name
		here := "On this node: held by this node"
		if n != placed {
			here = "On this node: owner " + placed.Name
		}
		if !strings.Contains(string(out), want) || !strings.Contains(string(out), here) {
			t.Errorf("herald-dbg explain on %s:\n%s\nwant %q and %q", n.Name, out, want, here)
		}
	}

	start := client.Mark()
	prober := client.StartMarkedProber(vip, 20*time.Millisecond)
	defer func() { _, _ = prober.Stop() }()

	// kill -9: another node answers once the peers declare the owner dead.
	killedAt := time.Now()
	if err := placed.Kill9(); err != nil {
		t.Fatal(err)
	}
	interim := s.waitOwner("web", vip, placed)
	waitGratuitous(t, vip, interim, start)
	t.Logf("kill -9 of %s: %s holds the group after %s", placed.Name, interim.Name, time.Since(killedAt).Round(time.Millisecond))

	// Back up, it does not take the group back: it holds nothing, and the
	// group stays with its holder.
	must(t, placed.Start())
	must(t, placed.waitReady())
	// The SIGSTOP of the new owner: its program falls silent by itself
	// before the peers take over; thawed, it rejoins in a new term and
	// holds nothing any more.
	frozen := interim
	frozenAt := time.Now()
	before := client.Mark()
	must(t, frozen.Freeze())
	owner := s.waitOwner("web", vip, frozen)
	waitGratuitous(t, vip, owner, before)
	t.Logf("SIGSTOP of %s: %s holds the group after %s", frozen.Name, owner.Name, time.Since(frozenAt).Round(time.Millisecond))
	time.Sleep(time.Second)
	must(t, frozen.Thaw())
	waitWithdrawn(t, frozen, vip)
	time.Sleep(time.Second)
	if now := s.waitOwner("web", vip); now != owner {
		t.Fatalf("after %s thawed the group went to %s, want it to stay with %s", frozen.Name, now.Name, owner.Name)
	}
	expectNoDoubleAnswers(t, vip, prober, start)
	expectAnsweredOnlyBy(t, vip, owner)

	// The Lease counts the two changes of hands (placed → interim →
	// owner), as the spec says leaseTransitions does.
	waitFor(t, func() (bool, string) {
		l, err := s.lease("web")
		if err != nil || l == nil {
			return false, fmt.Sprintf("Lease %v: %v", l, err)
		}
		n := int32(-1)
		if l.Spec.LeaseTransitions != nil {
			n = *l.Spec.LeaseTransitions
		}
		return n == 2, fmt.Sprintf("Lease held by %s with leaseTransitions %d, want 2 (%s, then %s, then %s)",
			holderOf(l), n, placed.Name, interim.Name, owner.Name)
	})
}

// manyPoolCIDR backs TestMembersManyServices: one address per Service,
// on no interface; the responders answer ARP for them on the test LAN.
const manyPoolCIDR = "198.18.128.0/21"

// createManyServices creates n LoadBalancer Services from their own pool
// and returns their VIPs by Service name once LB IPAM gave them all one.
func (s *scenario) createManyServices(n int) map[string]netip.Addr {
	s.t.Helper()
	ctx := context.Background()
	poolName := s.ns + "-many"
	createPool(s.t, poolName, s.label, manyPoolCIDR)
	// After the Services, and after the failure dump (s.cleanup): a pool
	// deleted first would withdraw every VIP before the dump shows them.
	s.restore = append(s.restore, func() {
		_ = herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Delete(context.Background(), poolName, metav1.DeleteOptions{})
	})
	// Each Service asks for its own address of the pool (the harness's
	// small pool would serve some of them otherwise).
	block := netip.MustParsePrefix(manyPoolCIDR)
	type want struct {
		name string
		ip   netip.Addr
	}
	var wg sync.WaitGroup
	work := make(chan want)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				s.createServiceWith(w.name, func(svc *corev1.Service) {
					svc.Spec.AllocateLoadBalancerNodePorts = ptr.To(false)
					svc.Annotations = map[string]string{tables.AnnotationIPs: w.ip.String()}
				})
			}
		}()
	}
	ip := block.Addr()
	for i := range n {
		ip = ip.Next()
		work <- want{fmt.Sprintf("svc-%04d", i), ip}
	}
	close(work)
	wg.Wait()
	vips := map[string]netip.Addr{}
	waitFor(s.t, func() (bool, string) {
		list, err := kube.CoreV1().Services(s.ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for i := range list.Items {
			for _, in := range list.Items[i].Status.LoadBalancer.Ingress {
				if a, err := netip.ParseAddr(in.IP); err == nil && block.Contains(a) {
					vips[list.Items[i].Name] = a
				}
			}
		}
		return len(vips) == n, fmt.Sprintf("%d of %d Services have an address of %s", len(vips), n, manyPoolCIDR)
	})
	for _, vip := range vips {
		s.vips = append(s.vips, vip)
	}
	return vips
}

// responderOwners reads the responder map of every node whose agent runs
// (a stopped agent's program is detached): the nodes that answer for each
// IP.
func responderOwners(t testing.TB) map[netip.Addr][]string {
	t.Helper()
	out := map[netip.Addr][]string{}
	for _, n := range nodes {
		if !n.Running() {
			continue
		}
		entries, err := n.mapEntries()
		if err != nil {
			t.Fatalf("%s: %v", n.Name, err)
		}
		for _, e := range entries {
			out[e.IP] = append(out[e.IP], n.Name)
		}
	}
	return out
}

// 1000 Services are spread over the three
// nodes (each VIP in exactly one responder, in the Lease's holder's), and
// sampled VIPs are answered by exactly one MAC.
func TestMembersManyServices(t *testing.T) {
	s := newScenario(t)
	const n = 1000
	vips := s.createManyServices(n)
	s.createPolicy("all", nil)

	var owners map[netip.Addr][]string
	waitFor(t, func() (bool, string) {
		owners = responderOwners(t)
		answered := 0
		for _, vip := range vips {
			switch len(owners[vip]) {
			case 0:
			case 1:
				answered++
			default:
				return false, fmt.Sprintf("%s is in the responders of %v", vip, owners[vip])
			}
		}
		return answered == n, fmt.Sprintf("%d of %d VIPs in exactly one responder", answered, n)
	})
	load := map[string]int{}
	for _, vip := range vips {
		load[owners[vip][0]]++
	}
	busiest := 0
	for _, l := range load {
		busiest = max(busiest, l)
	}
	t.Logf("%d VIPs, each in one responder; per node %v (max/mean %.3f)", n, load, float64(busiest)/(float64(n)/float64(len(nodes))))

	// The Leases name the node that answers.
	leases, err := kube.CoordinationV1().Leases(leaseNS).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	holders := map[string]string{}
	for i := range leases.Items {
		holders[leases.Items[i].Name] = holderOf(&leases.Items[i])
	}
	for name, vip := range vips {
		if h := holders[leaseName(s.ns, name)]; h != owners[vip][0] {
			t.Errorf("Lease of %s names %q, but %s answers for %s", name, h, owners[vip][0], vip)
		}
	}
	// A sample on the wire: each VIP is answered, and never by two MACs.
	// A node whose peers' confirmations lapse (its members cell starved on
	// a 2-core machine running several suites at once) fences itself and
	// is silent until it is confirmed again, and in a new term until it has
	// re-taken its addresses: the fence at work. So a sample waits for an
	// answer rather than expecting the first request to get one. Two MACs
	// are never right.
	macs := map[string]string{}
	for _, n := range nodes {
		macs[n.host.MAC.String()] = n.Name
	}
	i := 0
	for _, vip := range vips {
		if i++; i > 20 {
			break
		}
		waitFor(t, func() (bool, string) {
			r := probe(t, vip)
			switch got := r.MACs(); len(got) {
			case 0:
				return false, fmt.Sprintf("ARP for %s: %s", vip, r)
			case 1:
				if macs[got[0]] == "" {
					t.Fatalf("ARP for %s: %s, answered by no node's MAC", vip, r)
				}
				return true, ""
			default:
				t.Fatalf("ARP for %s: %s, want exactly one MAC", vip, r)
				return false, ""
			}
		})
	}
}

// partition cuts a node off from the other nodes and the API server (its
// packets to and from them are dropped in its namespace; ARP, which is
// not IP, still flows) until the returned function heals it.
func partition(t testing.TB, n *node) (heal func()) {
	t.Helper()
	var peers []string
	for _, o := range others(n) {
		peers = append(peers, o.host.IP.String())
	}
	return dropIPTraffic(t, n, "hl2partition", append(peers, lan.RootIP().String())...)
}

// The owner is cut off from the other nodes and the API server: it stops
// answering by itself (no peer confirms it), the others take over, and
// once healed it rejoins without taking anything back.
func TestMembersPartition(t *testing.T) {
	s := newScenario(t)
	vip, placed := s.announceWeb()

	start := client.Mark()
	prober := client.StartMarkedProber(vip, 20*time.Millisecond)
	defer func() { _, _ = prober.Stop() }()
	cut := time.Now()
	heal := partition(t, placed)
	interim := s.waitOwner("web", vip, placed)
	waitGratuitous(t, vip, interim, start)
	t.Logf("partition of %s: %s holds the group after %s", placed.Name, interim.Name, time.Since(cut).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // the cut-off node stays silent
	heal()
	// Healed, it rejoins in a new term: it holds nothing, the group stays.
	waitWithdrawn(t, placed, vip)
	time.Sleep(2 * time.Second)
	if now := s.waitOwner("web", vip); now != interim {
		t.Fatalf("after healing, the group went to %s, want it to stay with %s", now.Name, interim.Name)
	}
	expectNoDoubleAnswers(t, vip, prober, start)
	expectAnsweredOnlyBy(t, vip, interim)
}

// The API server stops: the nodes still see each other, so nothing is
// withdrawn and nothing moves; an owner killed meanwhile is still replaced,
// and the takeover is written into its Lease once the API server is back.
func TestMembersAPIServerOutage(t *testing.T) {
	s := newScenario(t)
	s.createPolicy("all", nil)
	names := []string{"a", "b", "c", "d", "e", "f"}
	vips := map[string]netip.Addr{}
	for _, name := range names {
		s.createService(name)
	}
	owner := map[string]*node{}
	for _, name := range names {
		vips[name] = s.waitVIP(name)
		owner[name] = s.waitOwner(name, vips[name])
	}
	if err := testCluster.FreezeAPIServer(); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if err := testCluster.ThawAPIServer(); err != nil {
				t.Error(err)
			}
		}
	}
	defer thaw()
	t.Logf("API server stopped")
	// Longer than any Lease the agents know of (their node Leases: 2s).
	time.Sleep(3 * leaseDuration)
	for _, name := range names {
		expectAnsweredOnlyBy(t, vips[name], owner[name])
	}
	t.Logf("after %s without the API server, every VIP is answered by its owner", 3*leaseDuration)

	victim := owner[names[0]]
	start := client.Mark()
	prober := client.StartMarkedProber(vips[names[0]], 20*time.Millisecond)
	defer func() { _, _ = prober.Stop() }()
	if err := victim.Kill9(); err != nil {
		t.Fatal(err)
	}
	var interim *node
	waitFor(t, func() (bool, string) {
		r := probe(t, vips[names[0]])
		if macs := r.MACs(); len(macs) == 1 && macs[0] != victim.host.MAC.String() {
			interim = nodeByMAC(r.Replies[0].SHA)
			return interim != nil, ""
		}
		return false, fmt.Sprintf("%s: %s", vips[names[0]], r)
	})
	t.Logf("kill -9 of %s during the outage: %s answers for %s", victim.Name, interim.Name, vips[names[0]])
	expectNoDoubleAnswers(t, vips[names[0]], prober, start)
	thaw()
	// The takeover is recorded: the Lease names the node that answers.
	waitFor(t, func() (bool, string) {
		l, err := s.lease(names[0])
		if err != nil {
			return false, err.Error()
		}
		return holderOf(l) == interim.Name, fmt.Sprintf("Lease %s holder %q, want %s", leaseName(s.ns, names[0]), holderOf(l), interim.Name)
	})
}

// A node leaving (its agent stopped) hands its groups over, and only
// its own move; coming back, it gets its share, each group by a handover
// (the holder withdraws before the new owner answers); no request for any
// of the VIPs is ever answered by two MACs.
func TestMembersJoinLeave(t *testing.T) {
	s := newScenario(t)
	s.createPolicy("all", nil)
	const n = 24 // the harness's pool has 32 addresses
	var names []string
	vips := map[string]netip.Addr{}
	for i := range n {
		name := fmt.Sprintf("s%02d", i)
		names = append(names, name)
		s.createService(name)
	}
	for _, name := range names {
		vips[name] = s.waitVIP(name)
	}
	settled := func(cond func(map[netip.Addr][]string) (bool, string)) map[netip.Addr][]string {
		var owners map[netip.Addr][]string
		waitFor(t, func() (bool, string) {
			owners = responderOwners(t)
			for _, vip := range vips {
				if len(owners[vip]) != 1 {
					return false, fmt.Sprintf("%s in the responders of %v", vip, owners[vip])
				}
			}
			return cond(owners)
		})
		return owners
	}
	before := settled(func(map[netip.Addr][]string) (bool, string) { return true, "" })
	start := client.Mark()
	var probers []*arpwatch.MarkedProber
	for _, name := range names {
		probers = append(probers, client.StartMarkedProber(vips[name], 100*time.Millisecond))
	}
	defer func() {
		for _, p := range probers {
			_, _ = p.Stop()
		}
	}()

	leaving := nodes[2]
	must(t, leaving.Stop())
	without := settled(func(o map[netip.Addr][]string) (bool, string) {
		for _, vip := range vips {
			if o[vip][0] == leaving.Name {
				return false, fmt.Sprintf("%s still answered by %s", vip, leaving.Name)
			}
		}
		return true, ""
	})
	moved, own := 0, 0
	for _, vip := range vips {
		if before[vip][0] == leaving.Name {
			own++
		}
		if before[vip][0] != without[vip][0] {
			moved++
			if before[vip][0] != leaving.Name {
				t.Errorf("%s moved from %s to %s, though only %s left", vip, before[vip][0], without[vip][0], leaving.Name)
			}
		}
	}
	t.Logf("%s left: %d of %d groups moved, its own %d", leaving.Name, moved, n, own)

	must(t, leaving.Start())
	must(t, leaving.waitReady())
	share := n / len(nodes)
	after := settled(func(o map[netip.Addr][]string) (bool, string) {
		got := 0
		for _, vip := range vips {
			if o[vip][0] == leaving.Name {
				got++
			}
		}
		return got == share, fmt.Sprintf("%s answers for %d VIPs, want its share %d", leaving.Name, got, share)
	})
	moved = 0
	for _, vip := range vips {
		if after[vip][0] != without[vip][0] {
			moved++
			if after[vip][0] != leaving.Name {
				t.Errorf("%s moved from %s to %s, though only %s joined", vip, without[vip][0], after[vip][0], leaving.Name)
			}
		}
	}
	t.Logf("%s came back: %d groups moved to it, its share", leaving.Name, moved)

	marks := make([][]int, len(probers))
	for i, p := range probers {
		var err error
		if marks[i], err = p.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(arpwatch.ProbeWindow)
	frames, err := client.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	windows := 0
	for i, name := range names {
		vip := vips[name]
		w, doubles := client.DoubleAnswers(frames, vip, marks[i])
		windows += w
		if len(doubles) > 0 {
			t.Errorf("%s: %d of %d requests answered by two MACs:\n  %s", vip, len(doubles), w, strings.Join(doubles, "\n  "))
		}
	}
	t.Logf("%d requests for %d VIPs, each answered by at most one MAC", windows, n)
}

// Services that share an IP (a sharing key) are one group: one node
// answers for the IP, one Lease (named after the first Service) records
// it, and it moves as one when the owner dies.
func TestMembersSharedIP(t *testing.T) {
	s := newScenario(t)
	s.createPolicy("all", nil)
	for _, name := range []string{"http", "https"} {
		port := int32(80)
		if name == "https" {
			port = 443
		}
		s.createServiceWith(name, func(svc *corev1.Service) {
			svc.Annotations = map[string]string{tables.AnnotationSharingKey: "web"}
			svc.Spec.Ports = []corev1.ServicePort{{Name: name, Port: port, Protocol: corev1.ProtocolTCP}}
		})
	}
	vip := s.waitVIP("http")
	if other := s.waitVIP("https"); other != vip {
		t.Fatalf("the Services do not share an IP: %s and %s", vip, other)
	}
	owner := s.waitOwner("http", vip) // the group's Lease: its first Service's
	expectAnsweredOnlyBy(t, vip, owner)
	if l, err := s.lease("https"); err != nil || l != nil {
		t.Errorf("Lease of the second Service: %v (%v), want none: the group has one Lease", l, err)
	}
	start := client.Mark()
	prober := client.StartMarkedProber(vip, 20*time.Millisecond)
	defer func() { _, _ = prober.Stop() }()
	if err := owner.Kill9(); err != nil {
		t.Fatal(err)
	}
	interim := s.waitOwner("http", vip, owner)
	t.Logf("kill -9 of %s: %s answers for the shared %s", owner.Name, interim.Name, vip)
	expectNoDoubleAnswers(t, vip, prober, start)
	expectAnsweredOnlyBy(t, vip, interim)
}
