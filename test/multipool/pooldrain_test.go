package multipool

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	cnitypes "github.com/containernetworking/cni/pkg/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/cells/podipam/cidrallocator"
	"github.com/heraldlb/herald/cells/podipam/nodeipam"
	"github.com/heraldlb/herald/tables"
	"github.com/heraldlb/herald/test/agentproc"
)

// allocatedOf returns the CIDRs a node's CiliumNode lists under a pool.
func allocatedOf(t *testing.T, n *node, pool string) []string {
	t.Helper()
	cn, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range cn.Spec.IPAM.Pools.Allocated {
		if a.Pool == pool {
			for _, c := range a.CIDRs {
				out = append(out, string(c))
			}
		}
	}
	return out
}

// waitAllocated waits until a node lists exactly these CIDRs of a pool.
func waitAllocated(t *testing.T, n *node, pool string, want ...string) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		got := allocatedOf(t, n, pool)
		slices.Sort(got)
		slices.Sort(want)
		return slices.Equal(got, want), fmt.Sprintf("%s holds %v of pool %s, want %v", n.name, got, pool, want)
	})
}

// addRefused runs an ADD that must fail with the CNI code, its message
// containing want.
func addRefused(t *testing.T, p *pod, code uint, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	err := p.add(ctx)
	var cniErr *cnitypes.Error
	if !errors.As(err, &cniErr) || cniErr.Code != code || !strings.Contains(cniErr.Msg, want) {
		t.Fatalf("ADD of %s/%s: %v, want CNI error %d containing %q", p.Namespace, p.Name, err, code, want)
	}
	t.Logf("ADD of %s/%s refused with code %d after %s", p.Namespace, p.Name, code, time.Since(start).Round(time.Millisecond))
	_ = p.node.rt.Del(ctx, p.Pod) // the runtime cleans up the failed ADD
}

// TestRemovedCIDRDrains: a CIDR removed from its pool while a node's pods
// use part of it drains: the pods keep their addresses, new pods on that
// node get addresses from the pool's remaining CIDRs (the node asks for
// one), the pool's RemovedCIDRsInUse condition names it until the node
// releases it, which happens once its last pod is gone.
func TestRemovedCIDRDrains(t *testing.T) {
	logAgentsOnFailure(t)
	createPool(t, "drain", []string{"198.18.124.0/26", "198.18.124.64/26"}, 27)
	ns := namespace(t, "drain", v4pool("drain"))
	n := nodes[0]
	old := startPod(t, n, ns, "old", nil)
	waitAllocated(t, n, "drain", "198.18.124.0/27")

	setPoolCIDRs(t, "drain", "198.18.124.64/26")
	waitPoolCondition(t, "drain", tables.ConditionPodPoolRemovedInUse, metav1.ConditionTrue, "198.18.124.0/27 (node "+n.name+")")
	// Created right after the edit: its address comes from what stays in
	// the pool, never from the removed CIDR (which still has room).
	for i := 0; i < 3; i++ {
		p := startPod(t, n, ns, fmt.Sprintf("new%d", i), nil)
		if a := p.ipOf(tables.IPv4); !mustPrefix("198.18.124.64/26").Contains(a) {
			t.Fatalf("a pod created after the CIDR left the pool got %s, out of the removed CIDR", a)
		}
		defer p.stop(t)
	}
	allocs, err := n.allocations()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(allocs, func(a *tables.PodIPAllocation) bool { return a.IP == old.ipOf(tables.IPv4) && a.PodName == "old" }) {
		t.Fatalf("the pod in the removed CIDR lost its address %s: %+v", old.ipOf(tables.IPv4), allocs)
	}
	rows, err := agentproc.Table[*tables.NodePodCIDR](n.agent, tables.NodePodCIDRsTableName)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(rows, func(r *tables.NodePodCIDR) bool { return r.CIDR.String() == "198.18.124.0/27" }); i < 0 || !rows[i].Draining {
		t.Fatalf("herald-dbg statedb node-pod-cidrs does not show the removed CIDR draining: %+v", rows)
	}

	// Its last pod goes: the node releases it, the condition resolves.
	old.stop(t)
	waitFor(t, timeout, func() (bool, string) {
		got := allocatedOf(t, n, "drain")
		return !slices.Contains(got, "198.18.124.0/27"), fmt.Sprintf("%s still holds the drained CIDR: %v", n.name, got)
	})
	waitPoolCondition(t, "drain", tables.ConditionPodPoolRemovedInUse, metav1.ConditionFalse, "")
}

// TestDeletePoolWithPreAllocation: a node pre-allocates from an IPv4-only
// pool (on dual-stack nodes: it asks only for IPv4, and no error stays on
// its CiliumNode). The pool is deleted while a pod of another node uses
// it: that node keeps it, Terminating; the pre-allocating node gives its
// idle CIDR back at once, and its new pods are refused with the pool's
// own code and an Event. The last pod gone, the deletion completes, with
// an Event on the pool.
func TestDeletePoolWithPreAllocation(t *testing.T) {
	logAgentsOnFailure(t)
	pre := nodes[2]
	// The pool first: a node is ready once it holds a CIDR of every pool
	// it pre-allocates.
	createPool(t, "mars", []string{"198.18.126.0/24"}, 28)
	restartAgent(t, pre, "--ipam-multi-pool-pre-allocation=default=8,mars=3")
	defer restartAgent(t, pre)
	waitAllocated(t, pre, "mars", "198.18.126.0/28")
	waitOperatorError(t, pre.name, func(msg string) bool { return msg == "" })
	cn, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), pre.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range cn.Spec.IPAM.Pools.Requested {
		if r.Pool == "mars" && (r.Needed.IPv4Addrs != 3 || r.Needed.IPv6Addrs != 0) {
			t.Fatalf("%s asks mars for %+v, want 3 IPv4 addresses and no IPv6 (mars has none)", pre.name, r.Needed)
		}
	}

	ns := namespace(t, "mars", v4pool("mars"))
	user := startPod(t, nodes[0], ns, "user", nil)
	if err := herald.CiliumV2alpha1().CiliumPodIPPools().Delete(context.Background(), "mars", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// The pre-allocating node lets go of its idle CIDR; the pool waits for
	// the node whose pod uses it.
	waitAllocated(t, pre, "mars")
	waitPoolCondition(t, "mars", tables.ConditionPodPoolTerminating, metav1.ConditionTrue, "waiting for nodes to release their CIDRs: "+nodes[0].name)
	refused := newPod(t, pre, ns, "late", nil)
	addRefused(t, refused, ipamv1.CodePoolDeleting, `CiliumPodIPPool "mars" (namespace annotation ipam.cilium.io/ipv4-pool) is being deleted`)
	waitEvent(t, ns, "Pod", "late", nodeipam.EventPoolDeleting, `"mars"`)
	refused.stop(t)

	user.stop(t)
	waitFor(t, timeout, func() (bool, string) {
		_, err := herald.CiliumV2alpha1().CiliumPodIPPools().Get(context.Background(), "mars", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("pool mars still exists after its last pod went: %v", err)
	})
	t.Logf("pool mars deleted %s after the delete request", time.Since(start).Round(time.Millisecond))
	waitEventOfType(t, corev1.EventTypeNormal, "", "CiliumPodIPPool", "mars", cidrallocator.EventPoolReleased, "its deletion completes")
}

// TestDeleteIdlePreAllocatedPool: a pool nobody uses but one node
// pre-allocates from is deleted: the node gives its CIDR back and the
// deletion completes, with an Event on the pool.
func TestDeleteIdlePreAllocatedPool(t *testing.T) {
	logAgentsOnFailure(t)
	pre := nodes[2]
	// The pool first: a node is ready once it holds a CIDR of every pool
	// it pre-allocates.
	createPool(t, "venus", []string{"198.18.127.0/24"}, 28)
	restartAgent(t, pre, "--ipam-multi-pool-pre-allocation=default=8,venus=3")
	defer restartAgent(t, pre)
	waitAllocated(t, pre, "venus", "198.18.127.0/28")
	waitFor(t, timeout, func() (bool, string) {
		p, err := herald.CiliumV2alpha1().CiliumPodIPPools().Get(context.Background(), "venus", metav1.GetOptions{})
		return err == nil && slices.Contains(p.Finalizers, tables.PodIPPoolFinalizer), fmt.Sprintf("pool venus has no finalizer: %v", err)
	})
	if err := herald.CiliumV2alpha1().CiliumPodIPPools().Delete(context.Background(), "venus", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	waitFor(t, timeout, func() (bool, string) {
		_, err := herald.CiliumV2alpha1().CiliumPodIPPools().Get(context.Background(), "venus", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprintf("pool venus, only pre-allocated, is still there: %v; %s holds %v", err, pre.name, allocatedOf(t, pre, "venus"))
	})
	t.Logf("pool venus deleted %s after the delete request", time.Since(start).Round(time.Millisecond))
	waitEventOfType(t, corev1.EventTypeNormal, "", "CiliumPodIPPool", "venus", cidrallocator.EventPoolReleased, "its deletion completes")
}

// TestUnservableAddAnsweredWithReason: an ADD waiting for a CIDR the
// allocator cannot give is answered with the allocator's reason and the
// code of that reason (a conflicting pool here; an exhausted one in
// TestExhaustionAndReclaim), not after the ADD's whole wait.
func TestUnservableAddAnsweredWithReason(t *testing.T) {
	logAgentsOnFailure(t)
	// Newer than default and inside its CIDR: conflicting, it gets nothing.
	createPool(t, "late", []string{"198.18.64.0/24"}, 28)
	waitPoolCondition(t, "late", tables.ConditionPodPoolConflict, metav1.ConditionTrue, "overlaps")
	ns := namespace(t, "late", v4pool("late"))
	p := newPod(t, nodes[0], ns, "p", nil)
	addRefused(t, p, ipamv1.CodePoolConflict, `unable to allocate IPv4 CIDRs from pool "late": the pool conflicts with another one`)
	waitEvent(t, ns, "Pod", "p", nodeipam.EventPoolConflict, `pool "late"`)
	p.stop(t)
}

// TestMaskSizeWithoutPodAddresses: a pool whose maskSize leaves no
// address for pods in a node CIDR (/32: Herald reserves the network
// address, the gateway and the broadcast address of each) applies, as
// under Cilium's CRD. The allocator hands none of its CIDRs out and says
// why on the pool and in the node's operator-status; an ADD for it is
// refused with that reason (CNI error 105) and an Event on the Pod.
func TestMaskSizeWithoutPodAddresses(t *testing.T) {
	logAgentsOnFailure(t)
	const why = "maskSize /32 leaves no address for pods: a node CIDR of that size has 1 address, and Herald reserves the network address, the gateway"
	createPool(t, "slash32", []string{"198.18.102.0/28"}, 32)
	waitPoolCondition(t, "slash32", tables.ConditionPodPoolInvalidSpec, metav1.ConditionTrue, "spec.ipv4.maskSize: /32 leaves no address for pods")
	ns := namespace(t, "slash32", v4pool("slash32"))
	n := nodes[0]
	p := newPod(t, n, ns, "p", nil)
	addRefused(t, p, ipamv1.CodePoolMaskSize, `unable to allocate IPv4 CIDRs from pool "slash32": its `+why)
	waitEvent(t, ns, "Pod", "p", nodeipam.EventPoolMaskSize, `pool "slash32"`)
	waitOperatorError(t, n.name, func(msg string) bool { return strings.Contains(msg, `from pool "slash32": its `+why) })
	for _, m := range nodes {
		if got := allocatedOf(t, m, "slash32"); len(got) > 0 {
			t.Fatalf("%s holds %v of pool slash32, want nothing", m.name, got)
		}
	}
	p.stop(t)
}

// TestCiliumNodeDeletedUnderRunningAgent: a node's CiliumNode is deleted
// while its agent runs and its pods use a CIDR (what happens when its Node
// is deleted where kube-controller-manager runs). The agent creates it
// again listing that CIDR, another node asking for room meanwhile gets
// other CIDRs, and the pod keeps its address.
func TestCiliumNodeDeletedUnderRunningAgent(t *testing.T) {
	logAgentsOnFailure(t)
	createPool(t, "keep", []string{"198.18.123.0/26"}, 27) // two /27s
	ns := namespace(t, "keep", v4pool("keep"))
	n, other := nodes[0], nodes[1]
	p := startPod(t, n, ns, "p", nil)
	defer p.stop(t)
	held := allocatedOf(t, n, "keep")
	if len(held) != 1 {
		t.Fatalf("%s holds %v of pool keep, want one CIDR", n.name, held)
	}
	cn, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), n.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mark := n.agent.Mark()
	if err := herald.CiliumV2().CiliumNodes().Delete(context.Background(), n.name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The agent says so (multi-pool.md, "When a Node is deleted"), naming
	// the CIDR it lists again.
	waitLogged(t, n, mark, `msg="Created the CiliumNode again, listing the CIDRs the node's pods still use"`)
	if line := lineWith(n.agent.LogsSince(mark), "Created the CiliumNode again"); !strings.Contains(line, held[0]) {
		t.Errorf("%s's log line does not name %s: %s", n.name, held[0], line)
	}
	// Another node needs room in the same pool right away.
	q := startPod(t, other, ns, "q", nil)
	defer q.stop(t)
	if mustPrefix(held[0]).Contains(q.ipOf(tables.IPv4)) {
		t.Fatalf("%s's pod got %s, in %s, which %s's pod %s still uses", other.name, q.ipOf(tables.IPv4), held[0], n.name, p.ipOf(tables.IPv4))
	}
	waitFor(t, timeout, func() (bool, string) {
		now, err := herald.CiliumV2().CiliumNodes().Get(context.Background(), n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got := allocatedOf(t, n, "keep")
		return now.UID != cn.UID && slices.Contains(got, held[0]),
			fmt.Sprintf("CiliumNode %s (uid %s, was %s) lists %v of pool keep, want %s again", n.name, now.UID, cn.UID, got, held[0])
	})
	allocs, err := n.allocations()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(allocs, func(a *tables.PodIPAllocation) bool { return a.IP == p.ipOf(tables.IPv4) }) {
		t.Fatalf("%s lost %s: %+v", n.name, p.ipOf(tables.IPv4), allocs)
	}
}

// lineWith returns the first line of log containing s.
func lineWith(log, s string) string {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}
