package l2

import (
	"fmt"
	"net/netip"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/mdlayher/ndp"
	corev1 "k8s.io/api/core/v1"
)

// expectNDPAnsweredOnlyBy waits until a solicitation for vip is answered by
// n alone, then checks that the next ones are too: one answer each, with
// n's MAC.
func expectNDPAnsweredOnlyBy(t testing.TB, vip netip.Addr, n *node) {
	t.Helper()
	want := []string{n.host.MAC.String()}
	probe := func() []string {
		t.Helper()
		macs, err := client6.Probe(vip)
		if err != nil {
			t.Fatal(err)
		}
		return macs
	}
	waitFor(t, func() (bool, string) {
		got := probe()
		return slices.Equal(got, want), fmt.Sprintf("want one advertisement from %s; got %v", n, got)
	})
	for i := range confirmations {
		if got := probe(); !slices.Equal(got, want) {
			t.Fatalf("solicitation %d after %s first answered alone: got advertisements from %v, want one from %s", i+1, n.Name, got, n)
		}
	}
}

// ndisc6 resolves vip from the client namespace with ndisc6 (which checks
// the advertisement as a host does: hop limit 255, the kernel's ICMPv6
// checksum check, the target) and returns the MAC it printed.
func ndisc6(t testing.TB, vip netip.Addr) string {
	t.Helper()
	if _, err := exec.LookPath("ndisc6"); err != nil {
		t.Fatalf("ndisc6 is missing (Debian package ndisc6, installed by install/dev/ensure-tools.sh)")
	}
	out, err := exec.Command("ip", "netns", "exec", clientHost.Netns, "ndisc6", "-q", "-1", "-r", "3", "-w", "500", vip.String(), devName).CombinedOutput()
	if err != nil {
		t.Fatalf("ndisc6 %s from %s: %v\n%s", vip, clientHost.Netns, err, out)
	}
	return strings.ToLower(strings.TrimSpace(string(out)))
}

// inGroup reports whether the namespace's eth0 is a member of vip's
// solicited-node multicast group (/proc/net/igmp6 of the namespace).
func inGroup(t testing.TB, ns string, vip netip.Addr) bool {
	t.Helper()
	group, err := ndp.SolicitedNodeMulticast(vip)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ip", "netns", "exec", ns, "cat", "/proc/net/igmp6").CombinedOutput()
	if err != nil {
		t.Fatalf("reading /proc/net/igmp6 in %s: %v\n%s", ns, err, out)
	}
	hex := fmt.Sprintf("%x", group.AsSlice())
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[1] == devName && f[2] == hex {
			return true
		}
	}
	return false
}

// TestIPv6VIP: an IPv6 VIP is answered by its owner alone, with an
// advertisement ndisc6 accepts; the owner (and only it) joined the VIP's
// solicited-node group, which is what gets multicast solicitations past a
// real NIC's filter and an MLD-snooping switch. After kill -9 of the owner
// another node answers and announces itself with an unsolicited
// advertisement; deleting the Service withdraws the VIP and leaves the
// group.
func TestIPv6VIP(t *testing.T) {
	s := newScenario(t)
	s.createPolicy("all", nil)
	s.createServiceWith("web6", singleStack(corev1.IPv6Protocol))
	vip := s.waitVIPIn("web6", poolCIDR6)

	owner := s.waitOwner("web6", vip)
	expectNDPAnsweredOnlyBy(t, vip, owner)
	if got := ndisc6(t, vip); got != owner.host.MAC.String() {
		t.Fatalf("ndisc6 %s: %q, want %s", vip, got, owner.host.MAC)
	}
	for _, n := range nodes {
		if got := inGroup(t, n.host.Netns, vip); got != (n == owner) {
			t.Errorf("%s in the solicited-node group of %s: %v, want %v", n.Name, vip, got, n == owner)
		}
	}
	expectDbgResponder(t, vip, owner)

	start := client6.Mark()
	t.Logf("kill -9 the agent of %s", owner.Name)
	if err := owner.Kill9(); err != nil {
		t.Fatal(err)
	}
	next := s.waitOwner("web6", vip, owner)
	expectNDPAnsweredOnlyBy(t, vip, next)
	waitFor(t, func() (bool, string) {
		frames, err := client6.Since(start)
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, f := range frames {
			if f.NA.TargetAddress == vip && !f.NA.Solicited && f.NA.Override && f.Dst == netip.IPv6LinkLocalAllNodes() &&
				f.HopLimit == 255 && f.TLLA().String() == next.host.MAC.String() {
				return true, ""
			}
			seen = append(seen, f.String())
		}
		return false, fmt.Sprintf("no unsolicited advertisement of %s from %s; advertisements seen: %v", vip, next, seen)
	})
	if !inGroup(t, next.host.Netns, vip) {
		t.Errorf("%s answers for %s but did not join its solicited-node group", next.Name, vip)
	}
	ensureAgents(t)
	expectDbgResponder(t, vip, next)

	s.deleteService("web6")
	waitWithdrawn(t, next, vip)
	if inGroup(t, next.host.Netns, vip) {
		t.Errorf("%s withdrew %s but stays in its solicited-node group", next.Name, vip)
	}
	if macs, err := client6.Probe(vip); err != nil || len(macs) != 0 {
		t.Fatalf("after the Service is gone, solicitations for %s got answers from %v (%v)", vip, macs, err)
	}
}

// expectDbgResponder checks `herald-dbg bpf responder` on the nodes whose
// pins the host sees (not node3's, pinned in its agent's own mount
// namespace; in a pod, herald-dbg runs in the agent's container, which
// sees them): the owner lists vip as
// answering neighbor solicitations, the others do not list it. Of two
// successive owners, at least one is checked.
func expectDbgResponder(t *testing.T, vip netip.Addr, owner *node) {
	t.Helper()
	for _, n := range nodes {
		if n.BPFRoot == "" {
			continue
		}
		out, err := n.Dbg("bpf", "responder")
		if err != nil {
			t.Fatalf("herald-dbg bpf responder on %s: %v", n.Name, err)
		}
		var line string
		for _, l := range strings.Split(string(out), "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == vip.String() {
				line = l
			}
		}
		switch {
		case n == owner && !strings.Contains(line, "neighbor solicitations"):
			t.Errorf("herald-dbg bpf responder on %s, the owner: no entry for %s answering neighbor solicitations:\n%s", n.Name, vip, out)
		case n != owner && line != "":
			t.Errorf("herald-dbg bpf responder on %s lists %s, owned by %s:\n%s", n.Name, vip, owner.Name, out)
		}
	}
}
