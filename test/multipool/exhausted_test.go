package multipool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	cnitypes "github.com/containernetworking/cni/pkg/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

// TestExhaustedDualStackPool: a dual-stack pool whose IPv4 CIDRs run out
// while its IPv6 ones still cover the node reports cilium.io/Exhausted
// naming the node and the family (the met IPv6 family does not hide it);
// extended at run time, the pool serves the next ADD and the condition
// resolves.
func TestExhaustedDualStackPool(t *testing.T) {
	logAgentsOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// IPv4: one /29, 5 addresses for pods; IPv6: two /125, 6 each.
	pool := &v2alpha1.CiliumPodIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: "duo"},
		Spec: v2alpha1.IPPoolSpec{
			IPv4: &v2alpha1.IPv4PoolSpec{CIDRs: []v2alpha1.PoolCIDR{"198.18.113.0/29"}, MaskSize: 29},
			IPv6: &v2alpha1.IPv6PoolSpec{CIDRs: []v2alpha1.PoolCIDR{"fd00:113::/124"}, MaskSize: 125},
		},
	}
	pools := herald.CiliumV2alpha1().CiliumPodIPPools()
	if _, err := pools.Create(ctx, pool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pools.Delete(context.Background(), "duo", metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting pool duo: %v", err)
		}
	})
	ns := namespace(t, "duo", map[string]string{tables.AnnotationIPPool: "duo"})
	// node3: TestExhaustionAndReclaim counts node1's refused ADDs.
	n3 := nodes[2]
	var pods []*pod
	defer func() {
		for _, p := range pods {
			p.stop(t)
		}
	}()
	for i := 0; i < 5; i++ {
		pods = append(pods, startPod(t, n3, ns, fmt.Sprintf("d%d", i), nil))
	}
	over := newPod(t, n3, ns, "over", nil)
	err := over.add(ctx)
	var cniErr *cnitypes.Error
	if !errors.As(err, &cniErr) || cniErr.Code != ipamv1.CodePoolExhausted || !strings.Contains(cniErr.Msg, `IPv4 CIDRs from pool "duo"`) {
		t.Fatalf("ADD beyond the pool's IPv4 CIDRs: %v, want CNI error %d naming pool duo and IPv4", err, ipamv1.CodePoolExhausted)
	}
	waitPoolCondition(t, "duo", tables.ConditionPodPoolExhausted, metav1.ConditionTrue, "node3 needs 6 IPv4 addresses, has 5")
	_ = n3.rt.Del(ctx, over.Pod) // the runtime cleans up the failed ADD

	waitFor(t, timeout, func() (bool, string) {
		p, err := pools.Get(ctx, "duo", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		p.Spec.IPv4.CIDRs = append(p.Spec.IPv4.CIDRs, "198.18.113.8/29")
		_, err = pools.Update(ctx, p, metav1.UpdateOptions{})
		return err == nil, fmt.Sprintf("extending pool duo: %v", err)
	})
	// The runtime retries a failed ADD, as the kubelet does: an ADD that
	// reaches the agent before it has seen the pool's new spec is refused
	// with the shortfall of the old one (one that arrives after it waits
	// for the new CIDR).
	waitFor(t, timeout, func() (bool, string) {
		err := over.add(ctx)
		if err != nil {
			_ = n3.rt.Del(ctx, over.Pod)
		}
		return err == nil, fmt.Sprintf("ADD after the pool was extended: %v", err)
	})
	pods = append(pods, over)
	waitPoolCondition(t, "duo", tables.ConditionPodPoolExhausted, metav1.ConditionFalse, "")
}
