package multipool

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

// TestLBPoolsAndPodPoolsNeverOverlap: an address must not go to a pod and
// to a LoadBalancer Service. Of an LB pool and a pod pool that overlap,
// the newer is conflicting, whichever kind it is: an LB pool on an older
// pod pool's CIDR gives no Service an address, and a pod pool on an older
// LB pool's range gives no node a CIDR (an ADD for it is refused as for
// any conflicting pool). Each says which pool it overlaps.
func TestLBPoolsAndPodPoolsNeverOverlap(t *testing.T) {
	logAgentsOnFailure(t)
	createPool(t, "pods-first", []string{"198.18.116.0/24"}, 28)
	nextSecond(t)
	createLBPool(t, "lb-on-pods", "198.18.116.64/26")
	waitLBPoolCondition(t, "lb-on-pods", tables.ConditionPoolConflict, metav1.ConditionTrue,
		"Pool conflicts since CIDR '198.18.116.64/26' overlaps CIDR '198.18.116.0/24' from CiliumPodIPPool 'pods-first'")
	waitPoolCondition(t, "pods-first", tables.ConditionPodPoolConflict, metav1.ConditionFalse, "")

	createLBPool(t, "lb-first", "198.18.117.0/25")
	nextSecond(t)
	createPool(t, "pods-on-lb", []string{"198.18.117.0/24"}, 28)
	const why = "Pool conflicts since CIDR '198.18.117.0/24' overlaps CIDR '198.18.117.0/25' from CiliumLoadBalancerIPPool 'lb-first'"
	waitPoolCondition(t, "pods-on-lb", tables.ConditionPodPoolConflict, metav1.ConditionTrue, why)
	waitLBPoolCondition(t, "lb-first", tables.ConditionPoolConflict, metav1.ConditionFalse, "")
	ns := namespace(t, "pods-on-lb", v4pool("pods-on-lb"))
	p := newPod(t, nodes[0], ns, "p", nil)
	addRefused(t, p, ipamv1.CodePoolConflict, why)
	p.stop(t)
	for _, n := range nodes {
		if got := allocatedOf(t, n, "pods-on-lb"); len(got) > 0 {
			t.Fatalf("%s holds %v of pool pods-on-lb, want nothing", n.name, got)
		}
	}
}

func createLBPool(t *testing.T, name, cidr string) {
	t.Helper()
	p := &v2alpha1.CiliumLoadBalancerIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v2alpha1.CiliumLoadBalancerIPPoolSpec{Blocks: []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: cidr}}},
	}
	pools := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools()
	if _, err := pools.Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pools.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting LB pool %s: %v", name, err)
		}
	})
}

// waitLBPoolCondition waits until the LB pool's condition has the status
// and a message containing want.
func waitLBPoolCondition(t *testing.T, pool, typ string, status metav1.ConditionStatus, want string) {
	t.Helper()
	waitFor(t, timeout, func() (bool, string) {
		p, err := herald.CiliumV2alpha1().CiliumLoadBalancerIPPools().Get(context.Background(), pool, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range p.Status.Conditions {
			if c.Type == typ {
				return c.Status == status && strings.Contains(c.Message, want),
					fmt.Sprintf("LB pool %s condition %s: %s %q, want %s containing %q", pool, typ, c.Status, c.Message, status, want)
			}
		}
		return false, fmt.Sprintf("LB pool %s has no condition %s (%+v)", pool, typ, p.Status.Conditions)
	})
}

// nextSecond waits for the next second: which of two pools is older is
// decided by their creation times, which have a resolution of one second
// (and, within one, by their names).
func nextSecond(t *testing.T) {
	start := time.Now().Truncate(time.Second)
	for time.Now().Truncate(time.Second).Equal(start) {
		time.Sleep(10 * time.Millisecond)
	}
}
