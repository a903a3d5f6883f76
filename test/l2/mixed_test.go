package l2

import (
	"testing"
	"time"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// TestMixedElections runs node3's agent with the Lease election among two
// members-election agents, as during a rolling switch of
// l2-announcements-election. node3 holds a group and renews its Lease; once
// node1 and node2 may announce it too, they leave it to node3 while it
// renews (taking it would only start a fight with its renewals), and take
// it over as soon as node3's agent stops and releases the Lease. No
// request is ever answered by two MACs.
func TestMixedElections(t *testing.T) {
	n3 := nodes[2]
	restart := func(args ...string) {
		t.Helper()
		must(t, n3.Stop())
		n3.SetExtraArgs(args...)
		must(t, n3.Start())
		must(t, n3.waitReady())
	}
	s := newScenario(t)
	restart("--l2-announcements-election=lease")
	t.Cleanup(func() { restart() })

	policy := s.createPolicy("mixed", onlyOn(n3))
	s.createService("web")
	vip := s.waitVIP("web")
	s.waitOwner("web", vip)
	expectAnsweredOnlyBy(t, vip, n3)

	start := client.Mark()
	prober := client.StartMarkedProber(vip, 20*time.Millisecond)
	defer func() { _, _ = prober.Stop() }()
	s.updatePolicy(policy, func(spec *v2alpha1.CiliumL2AnnouncementPolicySpec) { spec.NodeSelector = nil })
	// Several lease durations: node3 renews, the members leave it alone.
	for end := time.Now().Add(3 * leaseDuration); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		l, err := s.lease("web")
		if err != nil {
			t.Fatal(err)
		}
		if h := holderOf(l); h != n3.Name {
			t.Fatalf("the Lease of web went to %q while node3 (Lease election) renewed it", h)
		}
	}
	assertNotAnnounced(t, vip, nodes[0], nodes[1])
	out, err := nodes[0].Dbg("statedb", "l2-owners")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("node1's l2-owners:\n%s", out)

	// node3's agent stops and releases the Lease: a member takes over.
	before := client.Mark()
	must(t, n3.Stop())
	owner := s.waitOwner("web", vip, n3)
	waitGratuitous(t, vip, owner, before)
	expectNoDoubleAnswers(t, vip, prober, start)
	expectAnsweredOnlyBy(t, vip, owner)
}
