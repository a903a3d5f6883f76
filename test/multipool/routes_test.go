package multipool

import (
	"context"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// TestRoutesFollowCIDRs: with auto-direct-node-routes, the other nodes
// route a node's new CIDRs of both families through its InternalIP of the
// same family (protocol 196), the node itself routes none of its own, and
// once the node gives the CIDRs back (its pool deleted while no pod uses
// it) every node removes the routes.
func TestRoutesFollowCIDRs(t *testing.T) {
	logAgentsOnFailure(t)
	ctx := context.Background()
	const poolName = "routed"
	p := &v2alpha1.CiliumPodIPPool{ObjectMeta: metav1.ObjectMeta{Name: poolName}, Spec: v2alpha1.IPPoolSpec{
		IPv4: &v2alpha1.IPv4PoolSpec{CIDRs: []v2alpha1.PoolCIDR{"198.18.110.0/24"}, MaskSize: 26},
		IPv6: &v2alpha1.IPv6PoolSpec{CIDRs: []v2alpha1.PoolCIDR{"fd00:110::/112"}, MaskSize: 120},
	}}
	pools := herald.CiliumV2alpha1().CiliumPodIPPools()
	if _, err := pools.Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pools.Delete(context.Background(), poolName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
	owner := nodes[0]
	ns := namespace(t, "routes", map[string]string{tables.AnnotationIPPool: poolName})
	pd := startPod(t, owner, ns, "routed", nil)
	cidrs := map[tables.Family]netip.Prefix{}
	via := map[tables.Family]string{tables.IPv4: lan.Host(owner.name).IP.String(), tables.IPv6: nodeIPv6(0).String()}
	for _, f := range []tables.Family{tables.IPv4, tables.IPv6} {
		cidrs[f] = nodeCIDRContaining(t, owner.name, pd.ipOf(f))
	}
	for _, n := range nodes {
		for f, c := range cidrs {
			want := ""
			if n != owner {
				want = "via " + via[f]
			}
			waitFor(t, timeout, func() (bool, string) {
				got := routeTo(n, c)
				if want == "" {
					return got == "", fmt.Sprintf("%s routes its own CIDR %s: %q", n.name, c, got)
				}
				return strings.Contains(got, want), fmt.Sprintf("%s: route to %s is %q, want one %s", n.name, c, got, want)
			})
		}
	}

	pd.stop(t)
	if err := pools.Delete(ctx, poolName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		for _, c := range cidrs {
			waitFor(t, timeout, func() (bool, string) {
				got := routeTo(n, c)
				return got == "", fmt.Sprintf("%s still routes %s after %s gave it back: %q", n.name, c, owner.name, got)
			})
		}
	}
}

// routeTo is the node's route of protocol 196 to exactly c ("" if none).
func routeTo(n *node, c netip.Prefix) string {
	args := []string{"-n", lan.Host(n.name).Netns}
	if c.Addr().Is6() {
		args = append(args, "-6")
	}
	out, _ := exec.Command("ip", append(args, "route", "show", "proto", "196", "exact", c.String())...).CombinedOutput()
	return strings.TrimSpace(string(out))
}
