package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/cells/podipam/cidrallocator"
	"github.com/heraldlb/herald/tables"
)

// engineCIDR is the pool of the engine-alone runs: data only, never on an
// interface. /28s of it: 8192 CIDRs.
const (
	engineCIDR = "198.18.0.0/15"
	engineMask = 28
)

// benchEngine is the engine part.
func benchEngine(ctx context.Context, o options) error {
	var sizes []int
	for _, f := range strings.Split(o.engineN, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || n > 8192 {
			return fmt.Errorf("-engine-nodes: %q is not a node count of 1 to 8192", f)
		}
		sizes = append(sizes, n)
	}
	fmt.Printf("\n== engine: the pod CIDR allocator's decision logic alone\n")
	return engineScaling(ctx, sizes)
}

// engineScaling times the allocator's decision logic alone
// (cells/podipam/cidrallocator Engine, in this process, no API server) for growing
// numbers of nodes, the way the allocator job drives it: (A) every node
// there before the first Evaluate, then each CiliumNode coming back with
// its CIDR, one change and one Evaluate at a time; (B) nodes arriving one
// at a time, each followed by an Evaluate, and coming back with its CIDR
// (another change and Evaluate). Time that grows faster than the number
// of nodes shows up here first.
func engineScaling(ctx context.Context, sizes []int) error {
	fmt.Printf("\n  the allocator's engine alone (cells/podipam/cidrallocator Engine in this process; pool %s, /%d):\n", engineCIDR, engineMask)
	fmt.Printf("  %8s %22s %22s %18s\n", "nodes", "A: all there first", "B: one by one", "B per node")
	for _, n := range sizes {
		a := engineRun(n, false)
		b := engineRun(n, true)
		fmt.Printf("  %8d %22s %22s %18s\n", n, ms(a), ms(b), fmt.Sprintf("%.1fµs", float64(b)/float64(n)/1e3))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

func engineRun(n int, oneByOne bool) time.Duration {
	created := metav1.NewTime(time.Now())
	pool := tables.PodIPPoolFromK8s(&v2alpha1.CiliumPodIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: tables.DefaultPodIPPool, UID: "pool", CreationTimestamp: created},
		Spec:       v2alpha1.IPPoolSpec{IPv4: &v2alpha1.IPv4PoolSpec{CIDRs: []v2alpha1.PoolCIDR{engineCIDR}, MaskSize: engineMask}},
	})
	node := func(i int, allocated []v2.IPAMPoolAllocation) *tables.CiliumNode {
		cn := &v2.CiliumNode{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fake-%05d", i), UID: types.UID(fmt.Sprintf("uid-%d", i)), CreationTimestamp: created}}
		cn.Spec.IPAM.Pools.Requested = []v2.IPAMPoolRequest{{Pool: tables.DefaultPodIPPool, Needed: v2.IPAMPoolDemand{IPv4Addrs: fakeDemand}}}
		cn.Spec.IPAM.Pools.Allocated = allocated
		return tables.CiliumNodeFromK8s(cn)
	}
	e := cidrallocator.NewEngine()
	e.UpsertPool(pool)
	start := time.Now()
	now := time.Now()
	// back applies each decision as its CiliumNode coming back with the
	// CIDR, one watch event at a time, each followed by an Evaluate, as
	// the allocator job sees them.
	back := func(res cidrallocator.Result) {
		for _, d := range res.Decisions {
			var i int
			_, _ = fmt.Sscanf(d.Node, "fake-%05d", &i)
			var al []v2.IPAMPoolAllocation
			for _, a := range d.Add {
				x := v2.IPAMPoolAllocation{Pool: a.Pool}
				for _, c := range a.CIDRs {
					x.CIDRs = append(x.CIDRs, v2.IPAMPodCIDR(c.String()))
				}
				al = append(al, x)
			}
			e.UpsertNode(node(i, al))
			e.Evaluate(now)
		}
	}
	if !oneByOne {
		for i := range n {
			e.SetK8sNode(fmt.Sprintf("fake-%05d", i), true)
			e.UpsertNode(node(i, nil))
		}
		back(e.Evaluate(now))
		return time.Since(start)
	}
	for i := range n {
		e.SetK8sNode(fmt.Sprintf("fake-%05d", i), true)
		e.UpsertNode(node(i, nil))
		back(e.Evaluate(now))
	}
	return time.Since(start)
}
