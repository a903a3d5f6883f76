package multipool

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// handNode is a Node without an agent whose CiliumNode a test writes by
// hand, as a user or a broken tool would.
const handNode = "node8"

// TestAbsurdRequestedByHand: a CiliumNode whose requested list was edited
// by hand asks a pool for a million IPv4 addresses and the largest count
// the API takes of IPv6 addresses (from a /48 of /120s: the allocator used
// to hand CIDRs out until the pool ran dry, for IPv6 practically forever,
// stopping every other node's allocation), and names a pool that does not
// exist. The allocator adds nothing, says why naming the pools in the
// node's operator-status, a Warning Event on it and its log, and still
// serves the same pool to the node once its demand is sane.
func TestAbsurdRequestedByHand(t *testing.T) {
	logAgentsOnFailure(t)
	ctx := context.Background()
	const poolName = "absurd"
	p := &v2alpha1.CiliumPodIPPool{ObjectMeta: metav1.ObjectMeta{Name: poolName}, Spec: v2alpha1.IPPoolSpec{
		IPv4: &v2alpha1.IPv4PoolSpec{CIDRs: []v2alpha1.PoolCIDR{"198.18.108.0/22"}, MaskSize: 24},
		IPv6: &v2alpha1.IPv6PoolSpec{CIDRs: []v2alpha1.PoolCIDR{"fd00:108::/48"}, MaskSize: 120},
	}}
	if _, err := herald.CiliumV2alpha1().CiliumPodIPPools().Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: handNode}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		_ = kube.CoreV1().Nodes().Delete(ctx, handNode, metav1.DeleteOptions{})
		if err := herald.CiliumV2().CiliumNodes().Delete(ctx, handNode, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
		if err := herald.CiliumV2alpha1().CiliumPodIPPools().Delete(ctx, poolName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	cn := &v2.CiliumNode{ObjectMeta: metav1.ObjectMeta{Name: handNode}}
	cn.Spec.IPAM.Pools.Requested = []v2.IPAMPoolRequest{
		{Pool: poolName, Needed: v2.IPAMPoolDemand{IPv4Addrs: 1000000, IPv6Addrs: math.MaxInt64}},
		{Pool: "no-such-pool", Needed: v2.IPAMPoolDemand{IPv4Addrs: 8}},
	}
	if _, err := herald.CiliumV2().CiliumNodes().Create(ctx, cn, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	wants := []string{
		`unable to allocate IPv4 CIDRs from pool "absurd": the demand takes 3953 /24 CIDRs, more than the 1024 a node may hold of one pool and family (1000000 addresses requested, 0 available)`,
		`unable to allocate IPv6 CIDRs from pool "absurd": the demand takes 36312488334073921 /120 CIDRs, more than the 1024`,
		`pool "no-such-pool" does not exist`,
	}
	waitOperatorError(t, handNode, func(msg string) bool {
		for _, w := range wants {
			if !strings.Contains(msg, w) {
				return false
			}
		}
		return true
	})
	// The allocator writes CIDRs before the error of the same decision:
	// none came, and the suite's watch saw none at any moment.
	if got := allocatedCIDRs(t, handNode); len(got) != 0 {
		t.Fatalf("CiliumNode %s was given %v", handNode, got)
	}
	if at, ok := suiteWatch.FirstCIDRAt(handNode); ok {
		t.Fatalf("CiliumNode %s held a CIDR at %v", handNode, at)
	}
	waitEvent(t, "default", "CiliumNode", handNode, "PodCIDRAllocationFailed", wants[0])
	waitFor(t, timeout, func() (bool, string) {
		for _, n := range nodes {
			for _, l := range strings.Split(n.agent.Logs(5000), "\n") {
				if strings.Contains(l, "Cannot give a node the pod CIDRs it asks for") && strings.Contains(l, handNode) && strings.Contains(l, `pool \"absurd\"`) {
					return true, ""
				}
			}
		}
		return false, "no agent logged the refusal naming " + handNode + " and the pool"
	})

	// The demand made sane again, by hand: the pool serves the node.
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"ipam": map[string]any{"pools": map[string]any{
		"requested": []v2.IPAMPoolRequest{{Pool: poolName, Needed: v2.IPAMPoolDemand{IPv4Addrs: 8, IPv6Addrs: 8}}}}}}})
	if _, err := herald.CiliumV2().CiliumNodes().Patch(ctx, handNode, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, timeout, func() (bool, string) {
		got := allocatedCIDRs(t, handNode)[poolName]
		ok := len(got) == 2 && slices.Contains(got, "198.18.108.0/24") && slices.Contains(got, "fd00:108::/120")
		cn, err := herald.CiliumV2().CiliumNodes().Get(ctx, handNode, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if !ok || cn.Status.IPAM.OperatorStatus.Error != "" {
			return false, fmt.Sprintf("%s holds %v of %s, error %q; want one IPv4 and one IPv6 CIDR, no error", handNode, got, poolName, cn.Status.IPAM.OperatorStatus.Error)
		}
		return true, ""
	})
}

// TestPreAllocationBeyondBound: an agent whose ipam-multi-pool-pre-allocation
// asks for more than a node may hold gets nothing of the pool, and its
// STATUS says what it waits for and the allocator's reason.
func TestPreAllocationBeyondBound(t *testing.T) {
	logAgentsOnFailure(t)
	n := startExtraNode(t, []string{"--ipam-multi-pool-pre-allocation=default=1000000"}, nil)
	waitNotReady(t, n, `(ipam-multi-pool-pre-allocation default=1000000): unable to allocate IPv4 CIDRs from pool "default": the demand takes 3953 /24 CIDRs, more than the 1024 a node may hold of one pool and family`)
	if got := allocatedCIDRs(t, extraNode); len(got) != 0 {
		t.Fatalf("CiliumNode %s was given %v", extraNode, got)
	}
}
