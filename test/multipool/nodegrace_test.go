package multipool

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
)

// The documented times (Documentation/multi-pool.md, "When a Node is
// deleted"): how long a CiliumNode outlives its Node, and how long the
// CIDRs of a deleted CiliumNode go to no node.
const (
	deletedNodeGrace = time.Minute
	freedCIDRsRest   = 2 * time.Minute
)

// TestDeletedNodeGrace: the CiliumNode of a deleted Node keeps its CIDRs
// for a minute counted from the Node's deletion, however old the
// CiliumNode is, and goes afterwards; the CIDRs it held then go to no
// CiliumNode, not even the one the node's agent creates again at once.
// The test's cluster runs no kube-controller-manager, so no owner
// reference takes the CiliumNode with its Node: the allocator does. The
// node's agent is stopped first (a running agent creates its CiliumNode
// again at once), and the Node and agent come back at the end, whatever
// happened.
func TestDeletedNodeGrace(t *testing.T) {
	logAgentsOnFailure(t)
	ctx := context.Background()
	// Not the allocator's leader: a new leader starts the minute again.
	n := nodes[2]
	if leaderOf(t, tables.PodIPAMLease) == n {
		n = nodes[1]
	}
	saved, err := kube.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { giveNodeBack(t, n, saved) })

	// Code whose grace ran from the CiliumNode's creation deleted a
	// CiliumNode older than the grace as soon as its Node went.
	waitCiliumNodeOlderThan(t, n.name, deletedNodeGrace+2*time.Second)
	inUse := podAddresses(t, n)
	if err := n.agent.Stop(); err != nil {
		t.Fatal(err)
	}
	held, ok, err := ciliumNodeCIDRs(ctx, n.name)
	if err != nil || !ok || len(held) == 0 {
		t.Fatalf("CiliumNode %s before its Node's deletion: CIDRs %v, exists %v, error %v", n.name, held, ok, err)
	}
	marks := markAgents()
	deletedAt := time.Now()
	if err := kube.CoreV1().Nodes().Delete(ctx, n.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	// Well inside the minute, the CiliumNode is there with all its CIDRs.
	// This is what fails on code where the grace ran from the creation.
	const stillThereFor = 20 * time.Second
	for time.Since(deletedAt) < stillThereFor {
		got, ok, err := ciliumNodeCIDRs(ctx, n.name)
		switch {
		case err != nil:
			t.Fatal(err)
		case !ok:
			t.Fatalf("CiliumNode %s went %s after its Node's deletion, within the minute its Node's deletion starts", n.name, time.Since(deletedAt).Round(100*time.Millisecond))
		case !slices.Equal(got, held):
			t.Fatalf("CiliumNode %s holds %v %s after its Node's deletion; it held %v", n.name, got, time.Since(deletedAt).Round(100*time.Millisecond), held)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Afterwards it goes.
	var lastSeen time.Time
	waitFor(t, timeout, func() (bool, string) {
		_, ok, err := ciliumNodeCIDRs(ctx, n.name)
		if err != nil {
			return false, err.Error()
		}
		if ok {
			lastSeen = time.Now()
		}
		return !ok, fmt.Sprintf("CiliumNode %s still exists %s after its Node's deletion", n.name, time.Since(deletedAt).Round(time.Second))
	})
	// A new term of the allocator starts the minute again: the figure is
	// the minute only if no term began meanwhile.
	t.Logf("CiliumNode %s deleted %s after its Node (seen last %s after it; documented: %s; allocator terms begun meanwhile: %d)",
		n.name, time.Since(deletedAt).Round(100*time.Millisecond), lastSeen.Sub(deletedAt).Round(100*time.Millisecond), deletedNodeGrace,
		allocatorTermsSince(marks))

	giveNodeBack(t, n, saved)
	again, ok, err := ciliumNodeCIDRs(ctx, n.name)
	if err != nil || !ok || len(again) == 0 {
		t.Fatalf("CiliumNode %s after its agent came back: CIDRs %v, exists %v, error %v", n.name, again, ok, err)
	}
	t.Logf("CiliumNode %s created again, holding %v", n.name, again)
	checkFreedCIDRsUnused(t, held, inUse, lastSeen)
}

// checkFreedCIDRsUnused checks that no CiliumNode holds a CIDR of held
// that no pod used (those the node's agent lists again): the node's own
// new CiliumNode asks for CIDRs of the same pool and is given the first
// free ones, which the freed CIDRs would be but for their rest. It checks
// once, and only while the rest lasts for sure (its CiliumNode was still
// there at lastSeen).
func checkFreedCIDRsUnused(t *testing.T, held []string, inUse []netip.Addr, lastSeen time.Time) {
	t.Helper()
	var freed []netip.Prefix
	clean := true
	for _, c := range held {
		_, cidr, _ := strings.Cut(c, "=")
		p := mustPrefix(cidr)
		if !slices.ContainsFunc(inUse, p.Contains) {
			freed = append(freed, p)
		}
	}
	list, err := herald.CiliumV2().CiliumNodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if since := time.Since(lastSeen); since >= freedCIDRsRest {
		t.Logf("not checking that the freed CIDRs %v go to no node: the node came back %s after its CiliumNode went, after their rest of %s", freed, since.Round(time.Second), freedCIDRsRest)
		return
	}
	for _, cn := range list.Items {
		for _, a := range cn.Spec.IPAM.Pools.Allocated {
			for _, c := range a.CIDRs {
				if i := slices.IndexFunc(freed, mustPrefix(string(c)).Overlaps); i >= 0 {
					clean = false
					t.Errorf("CiliumNode %s holds %s (pool %s) less than %s after %s of the deleted CiliumNode was freed",
						cn.Name, c, a.Pool, freedCIDRsRest, freed[i])
				}
			}
		}
	}
	if clean {
		t.Logf("freed CIDRs %v are on no CiliumNode %s after their CiliumNode went", freed, time.Since(lastSeen).Round(100*time.Millisecond))
	}
}

// ciliumNodeCIDRs lists a CiliumNode's CIDRs as "pool=cidr", sorted; ok
// is false if it does not exist.
func ciliumNodeCIDRs(ctx context.Context, name string) (cidrs []string, ok bool, err error) {
	cn, err := herald.CiliumV2().CiliumNodes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	for _, a := range cn.Spec.IPAM.Pools.Allocated {
		for _, c := range a.CIDRs {
			cidrs = append(cidrs, a.Pool+"="+string(c))
		}
	}
	slices.Sort(cidrs)
	return cidrs, true, nil
}

// waitCiliumNodeOlderThan waits until the node's CiliumNode was created
// at least age ago.
func waitCiliumNodeOlderThan(t *testing.T, name string, age time.Duration) {
	t.Helper()
	cn, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The timestamp is in whole seconds, rounded down: a second more.
	if wait := time.Until(cn.CreationTimestamp.Add(age + time.Second)); wait > 0 {
		t.Logf("waiting %s until CiliumNode %s is %s old", wait.Round(time.Second), name, age)
		time.Sleep(wait)
	}
}

// podAddresses lists the addresses the node's pods hold.
func podAddresses(t *testing.T, n *node) []netip.Addr {
	t.Helper()
	rows, err := n.allocations()
	if err != nil {
		t.Fatal(err)
	}
	var out []netip.Addr
	for _, r := range rows {
		out = append(out, r.IP)
	}
	return out
}

// giveNodeBack creates the node's Node again as saved, if it is gone, and
// starts its agent again, if it is stopped, with the suite's flags.
func giveNodeBack(t *testing.T, n *node, saved *corev1.Node) {
	t.Helper()
	ctx := context.Background()
	_, err := kube.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		obj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: saved.Name, Labels: saved.Labels, Annotations: saved.Annotations}, Spec: saved.Spec}
		created, cerr := kube.CoreV1().Nodes().Create(ctx, obj, metav1.CreateOptions{})
		if cerr != nil {
			t.Fatalf("giving Node %s back: %v", n.name, cerr)
		}
		created.Status = saved.Status
		if _, err = kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("giving Node %s its status back: %v", n.name, err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	if !n.agent.Running() {
		restartAgent(t, n)
	}
}

// markAgents marks the end of every agent's logs.
func markAgents() map[*node]agentproc.LogMark {
	marks := map[*node]agentproc.LogMark{}
	for _, n := range nodes {
		marks[n] = n.agent.Mark()
	}
	return marks
}

// allocatorTermsSince counts the terms of the pod CIDR allocator begun on
// any agent since the marks: each begins by logging what it restored.
func allocatorTermsSince(marks map[*node]agentproc.LogMark) int {
	count := 0
	for n, m := range marks {
		count += strings.Count(n.agent.LogsSince(m), "Restored pod CIDRs from the CiliumNodes")
	}
	return count
}
