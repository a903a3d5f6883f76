package l2

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/test/agentproc"
)

// The VIP is answered by the Lease holder, with its MAC, and by no one
// else; it announced the VIP with a gratuitous ARP when it took it; only it
// has the VIP in its l2-announce table and its l2_responder_v4 map, whose
// counter counts the replies.
func TestOwnerAnswersAlone(t *testing.T) {
	s := newScenario(t)
	vip, owner := s.announceWeb()
	waitGratuitous(t, vip, owner, s.start)

	before := waitMapEntry(t, owner, vip)
	assertNotAnnounced(t, vip, others(owner)...)

	// A stock ARP client agrees.
	if macs := arping(t, vip, 3); len(macs) > 0 && !slices.Equal(macs, []string{owner.host.MAC.String()}) {
		t.Errorf("arping %s: replies from %v, want from %s only", vip, macs, owner)
	}

	// responses_sent counts what the datapath answered.
	const asks = 3
	for i := 0; i < asks; i++ {
		if res := probe(t, vip); len(res.Replies) != 1 {
			t.Fatalf("want exactly one reply from %s; %s", owner, res)
		}
	}
	waitFor(t, func() (bool, string) {
		after := waitMapEntry(t, owner, vip)
		return after.ResponsesSent >= before.ResponsesSent+asks,
			fmt.Sprintf("%s: responses_sent %d after %d more answered requests, was %d", owner.Name, after.ResponsesSent, asks, before.ResponsesSent)
	})
	assertNeverSpokeFor(t, vip, s.start, -1, others(owner)...)
}

// With the Lease election: killing the owner's agent with SIGKILL (no
// cleanup, its Lease still held
// until it expires) moves the answer to another node, which announces
// itself with a gratuitous ARP. The restarted agent does not answer while
// the other node holds the Lease.
func TestFailoverOnKill(t *testing.T) {
	useLeaseElection(t)
	s := newScenario(t)
	vip, old := s.announceWeb()

	killed := client.Mark()
	t.Logf("kill -9 the agent of %s (pid %d)", old.Name, old.PID())
	if err := old.Kill9(); err != nil {
		t.Fatal(err)
	}

	owner := s.waitOwner("web", vip, old)
	expectAnsweredOnlyBy(t, vip, owner)
	waitGratuitous(t, vip, owner, killed)
	// Its program went with the process: it did not answer once dead.
	assertNeverSpokeFor(t, vip, killed, -1, old)

	// Back up, the old owner does not take the VIP back: its stale map
	// entry is gone and it stays silent.
	restarted := client.Mark()
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	if err := old.waitReady(); err != nil {
		t.Fatal(err)
	}
	waitWithdrawn(t, old, vip)
	expectAnsweredOnlyBy(t, vip, owner)
	if l, err := s.lease("web"); err != nil || holderOf(l) != owner.Name {
		t.Errorf("Lease holder after %s came back: %q (%v), want %s", old.Name, holderOf(l), err, owner.Name)
	}
	assertNeverSpokeFor(t, vip, restarted, -1, old)
}

// Lease election: the policy moves from one node to another in one
// update. The first node keeps its Lease until its responder has the VIP
// out, then releases it, and the other takes it: never two MACs for one
// request.
func TestLeaseHandoverOnPolicyChange(t *testing.T) {
	useLeaseElection(t)
	s := newScenario(t)
	from, to := nodes[0], nodes[1]
	policy := s.createPolicy("one", onlyOn(from))
	s.createService("web")
	vip := s.waitVIP("web")
	s.waitOwnedBy("web", vip, from)

	start, logs := client.Mark(), from.Mark()
	prober := client.StartMarkedProber(vip, 20*time.Millisecond)
	defer func() { _, _ = prober.Stop() }()
	s.updatePolicy(policy, onlyOn(to))
	if owner := s.waitOwner("web", vip, from); owner != to {
		t.Fatalf("%s holds the Lease, but the policy selects only %s", owner.Name, to.Name)
	}
	waitGratuitous(t, vip, to, start)
	expectNoDoubleAnswers(t, vip, prober, start)
	expectAnsweredOnlyBy(t, vip, to)

	// Handed over by a release, after the responder took the VIP out.
	log := from.LogsSince(logs)
	withdrew, released := strings.Index(log, "Withdrawing"), strings.Index(log, "Released announcement lease")
	if withdrew < 0 || released < withdrew {
		t.Errorf("%s's log: withdrawing at %d, release at %d; want the release after the withdrawal:\n%s", from.Name, withdrew, released, log)
	}
}

// A policy whose nodeSelector excludes nodes never lets them answer: not
// while the selected node announces, not when it dies (nobody takes over),
// not after it comes back. Moving the label at runtime moves the answer.
func TestNodeSelectorExcludes(t *testing.T) {
	s := newScenario(t)
	node1, node2, node3 := nodes[0], nodes[1], nodes[2]
	key := "hl2.test/announce-" + s.label
	s.setNodeLabel(node1, key, "yes")
	s.createPolicy("selected", func(p *v2alpha1.CiliumL2AnnouncementPolicySpec) {
		p.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{key: "yes"}}
	})
	s.createService("web")
	vip := s.waitVIP("web")

	s.waitOwnedBy("web", vip, node1)
	assertNotAnnounced(t, vip, node2, node3)

	// node1 dies; the excluded nodes must not step in, even once its Lease
	// expired.
	t.Logf("kill -9 the agent of %s", node1.Name)
	if err := node1.Kill9(); err != nil {
		t.Fatal(err)
	}
	expectSilent(t, vip)
	waitFor(t, func() (bool, string) {
		l, err := s.lease("web")
		if err != nil || l == nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
			return false, fmt.Sprintf("Lease: %v %v", l, err)
		}
		expiry := l.Spec.RenewTime.Add(time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second)
		return time.Now().After(expiry), fmt.Sprintf("Lease renewed at %s for %ds", l.Spec.RenewTime, *l.Spec.LeaseDurationSeconds)
	})
	assertSilentFor(t, vip, silence)
	if l, err := s.lease("web"); err != nil || holderOf(l) != node1.Name {
		t.Errorf("Lease holder with %s dead: %q (%v), want still %s (nobody else may take it)", node1.Name, holderOf(l), err, node1.Name)
	}
	assertNotAnnounced(t, vip, node2, node3)

	// node1 is back: it announces again.
	if err := node1.Start(); err != nil {
		t.Fatal(err)
	}
	if err := node1.waitReady(); err != nil {
		t.Fatal(err)
	}
	s.waitOwnedBy("web", vip, node1)

	// Excluding node1 at runtime withdraws it (nobody else is selected);
	// selecting node2 moves the VIP there.
	s.setNodeLabel(node1, key, "")
	expectSilent(t, vip)
	waitWithdrawn(t, node1, vip)
	withdrawn := client.Mark()
	assertSilentFor(t, vip, silence)
	labelled := client.Mark()
	s.setNodeLabel(node2, key, "yes")
	s.waitOwnedBy("web", vip, node2, node1)
	waitGratuitous(t, vip, node2, labelled)
	assertNotAnnounced(t, vip, node1, node3)

	assertNeverSpokeFor(t, vip, s.start, -1, node3)
	assertNeverSpokeFor(t, vip, s.start, labelled, node2)
	assertNeverSpokeFor(t, vip, withdrawn, -1, node1)
}

// The interfaces of a policy decide where it announces: a regex that
// matches no device of the nodes means no answer at all; matching eth0
// announces; excluding eth0 again stops the answers and withdraws the map
// entry.
func TestInterfaceRegex(t *testing.T) {
	s := newScenario(t)
	policy := s.createPolicy("ifaces", func(p *v2alpha1.CiliumL2AnnouncementPolicySpec) {
		p.Interfaces = []string{"^ens[0-9]+$"}
	})
	s.createService("web")
	vip := s.waitVIP("web")

	assertSilentFor(t, vip, silence)
	assertNotAnnounced(t, vip, nodes...)
	if l, err := s.lease("web"); err != nil || holderOf(l) != "" {
		t.Errorf("Lease %s: holder %q (%v); no node may campaign for a Service it cannot announce", leaseName(s.ns, "web"), holderOf(l), err)
	}

	s.updatePolicy(policy, func(p *v2alpha1.CiliumL2AnnouncementPolicySpec) { p.Interfaces = []string{"^ens[0-9]+$", "^eth0$"} })
	owner := s.waitOwner("web", vip)
	expectAnsweredOnlyBy(t, vip, owner)
	waitMapEntry(t, owner, vip)

	excluded := client.Mark()
	s.updatePolicy(policy, func(p *v2alpha1.CiliumL2AnnouncementPolicySpec) { p.Interfaces = []string{"^eth1$"} })
	expectSilent(t, vip)
	waitWithdrawn(t, owner, vip)
	assertSilentFor(t, vip, silence)
	assertNotAnnounced(t, vip, nodes...)
	waitFor(t, func() (bool, string) {
		l, err := s.lease("web")
		if err != nil {
			return false, err.Error()
		}
		return holderOf(l) == "", fmt.Sprintf("Lease %s still held by %q after the policy excluded %s", leaseName(s.ns, "web"), holderOf(l), devName)
	})
	assertNeverSpokeFor(t, vip, excluded, -1, others(owner)...)
}

// Deleting the Service withdraws the l2-announce row and the map entry,
// and the VIP is no longer answered.
func TestDeleteServiceWithdraws(t *testing.T) {
	s := newScenario(t)
	vip, owner := s.announceWeb()
	waitMapEntry(t, owner, vip)

	s.deleteService("web")
	waitWithdrawn(t, owner, vip)
	expectSilent(t, vip)
	assertSilentFor(t, vip, silence)
	assertNotAnnounced(t, vip, nodes...)
	waitFor(t, func() (bool, string) {
		l, err := s.lease("web")
		if err != nil {
			return false, err.Error()
		}
		return holderOf(l) == "", fmt.Sprintf("Lease %s still held by %q after the Service was deleted", leaseName(s.ns, "web"), holderOf(l))
	})
}

// node3's agent runs with the default --bpf-root /sys/fs/bpf. `ip netns
// exec` gave it a fresh /sys without bpffs: it mounted one itself (in its
// own mount namespace), pinned its maps there, and answers.
func TestSelfMountedBPFFS(t *testing.T) {
	node3 := nodes[2]
	if node3.BPFRoot != "" {
		t.Fatalf("%s should run with the default --bpf-root", node3.Name)
	}
	s := newScenario(t)

	pid := node3.PID()
	mounts, err := agentproc.BPFFSMounts(pid)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(mounts, "/sys/fs/bpf") {
		t.Fatalf("agent %s (pid %d): no bpffs on /sys/fs/bpf in its mount namespace; bpffs mounts: %v", node3.Name, pid, mounts)
	}

	s.createPolicy("node3", onlyOn(node3))
	s.createService("web")
	vip := s.waitVIP("web")
	s.waitOwnedBy("web", vip, node3)
	waitMapEntry(t, node3, vip) // through /proc/<pid>/root/sys/fs/bpf
}

// With the Lease election, a frozen owner (SIGSTOP: alive, but neither
// renewing its Lease nor
// refreshing the datapath's heartbeat) stops answering once its heartbeat
// is a lease duration old, and another node takes over. When it thaws
// (SIGCONT) it finds the Lease taken and withdraws, without answering for
// the VIP again in between: the LAN never hears two owners.
func TestFrozenOwner(t *testing.T) {
	useLeaseElection(t)
	s := newScenario(t)
	// Any node may own it, the LB IPAM leader too: a frozen leader is
	// replaced, and it follows when it thaws.
	vip, old := s.announceWeb()

	pid := old.PID()
	t.Logf("SIGSTOP the agent of %s (pid %d)", old.Name, pid)
	if err := old.Freeze(); err != nil {
		t.Fatal(err)
	}
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = old.Thaw()
		}
	}
	t.Cleanup(thaw)

	owner := s.waitOwner("web", vip, old)
	expectAnsweredOnlyBy(t, vip, owner)
	waitGratuitous(t, vip, owner, s.start)

	// Thaw it while asking continuously, and watch it hand over.
	woke := client.Mark()
	stop := client.StartProber(vip, 20*time.Millisecond)
	t.Logf("SIGCONT the agent of %s (pid %d)", old.Name, pid)
	thaw()
	waitWithdrawn(t, old, vip)
	time.Sleep(time.Second) // keep asking a little longer
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	expectAnsweredOnlyBy(t, vip, owner)
	assertNeverSpokeFor(t, vip, woke, -1, old)
}

// The XDP responder (--l2-responder-mode xdp; generic mode on veth)
// answers like the tcx one.
func TestXDPResponder(t *testing.T) {
	node2 := nodes[1]
	// Registered first, so it runs last: the next test restarts node2 in
	// the default mode.
	t.Cleanup(func() {
		node2.SetExtraArgs()
		if err := node2.Stop(); err != nil {
			t.Error(err)
		}
	})
	s := newScenario(t)
	if err := node2.Stop(); err != nil {
		t.Fatal(err)
	}
	node2.SetExtraArgs("--l2-responder-mode", "xdp")
	if err := node2.Start(); err != nil {
		t.Fatal(err)
	}
	if err := node2.waitReady(); err != nil {
		t.Fatal(err)
	}

	s.createPolicy("node2", onlyOn(node2))
	s.createService("web")
	vip := s.waitVIP("web")
	s.waitOwnedBy("web", vip, node2)
	before := waitMapEntry(t, node2, vip)
	if res := probe(t, vip); len(res.Replies) != 1 {
		t.Fatalf("want exactly one reply from %s; %s", node2, res)
	}
	waitFor(t, func() (bool, string) {
		after := waitMapEntry(t, node2, vip)
		return after.ResponsesSent > before.ResponsesSent, fmt.Sprintf("responses_sent still %d", after.ResponsesSent)
	})
	s.deleteService("web")
	waitWithdrawn(t, node2, vip)
	expectSilent(t, vip)
}
