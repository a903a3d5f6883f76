package multipool

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
)

// TestCheck: the runtime's CHECK through bridge passes while the agent
// holds the pod's addresses, and fails once the agent no longer does (its
// DEL came to herald-ipam alone, the pod's interface still there).
func TestCheck(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[0]
	ns := namespace(t, "check", nil)
	p := startPod(t, n, ns, "c", nil)
	defer p.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.rt.Check(ctx, p.Pod); err != nil {
		t.Fatalf("CHECK of a pod the agent holds: %v", err)
	}
	if err := n.rt.DelegateDel(ctx, p.Pod); err != nil {
		t.Fatalf("herald-ipam DEL: %v", err)
	}
	err := n.rt.Check(ctx, p.Pod)
	if err == nil || !strings.Contains(err.Error(), "holds []") {
		t.Fatalf("CHECK after the agent released the pod's addresses: %v, want an error saying it holds none", err)
	}
}

// TestDelAfterNetnsGone: DEL through bridge succeeds when the pod's network
// namespace is gone already (the runtime removed it first), the agent
// releases the addresses at once (nothing queued), and a second DEL
// succeeds too.
func TestDelAfterNetnsGone(t *testing.T) {
	logAgentsOnFailure(t)
	n := nodes[1]
	ns := namespace(t, "delgone", nil)
	p := startPod(t, n, ns, "g", nil)
	ips := p.IPs()
	if err := p.netns.Delete(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p.Netns); err == nil {
		t.Fatalf("network namespace %s still there", p.Netns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := n.rt.Del(ctx, p.Pod); err != nil {
		t.Fatalf("DEL with the network namespace gone: %v", err)
	}
	rows, err := n.allocations()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if slices.Contains(ips, r.IP) {
			t.Fatalf("%s still allocated to %s/%s after DEL", r.IP, r.PodNS, r.PodName)
		}
	}
	queued, _ := filepath.Glob(filepath.Join(n.stateDir, ipamv1.PendingDelDir, "*.json"))
	if len(queued) > 0 {
		t.Fatalf("DELs queued although the agent answered: %v", queued)
	}
	p.stop(t) // DEL again, and the Pod object goes
}
