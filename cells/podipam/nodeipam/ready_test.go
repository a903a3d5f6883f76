package nodeipam

import (
	"net/netip"
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
)

// TestReady: the node is ready once it read its CiliumNode and holds a
// CIDR of every pre-allocated pool in each family the node runs and the
// pool has; the pool default counts only when it is pre-allocated.
func TestReady(t *testing.T) {
	dual := []tables.Family{tables.IPv4, tables.IPv6}
	v4 := []tables.Family{tables.IPv4}
	deleting := testPool("blue", "198.19.0.0/16", "fd01::/64")
	deleting.Deleting = true
	for _, tt := range []struct {
		name       string
		families   []tables.Family
		pre        map[string]int
		pools      []*tables.PodIPPool
		cidrs      []tables.PoolCIDRs // nil: the CiliumNode was not read yet
		shortfalls []tables.PodCIDRShortfall
		want       string // "" for ready
	}{{
		name: "CiliumNode not read yet", families: v4, pre: map[string]int{"default": 8},
		want: "the agent has not read this node's CiliumNode yet, so it knows none of the node's pod CIDRs",
	}, {
		name: "empty pre-allocation: ready once synced", families: dual, pre: map[string]int{},
		cidrs: []tables.PoolCIDRs{},
	}, {
		name: "default=0: nothing to wait for", families: dual, pre: map[string]int{"default": 0},
		pools: []*tables.PodIPPool{testPool("default", "198.18.0.0/15", "fd00::/8")}, cidrs: []tables.PoolCIDRs{},
	}, {
		name: "default=8 without its CIDR", families: v4, pre: map[string]int{"default": 8},
		pools: []*tables.PodIPPool{testPool("default", "198.18.0.0/15", "")}, cidrs: []tables.PoolCIDRs{},
		want: `waiting for an IPv4 CIDR of the pool "default" (ipam-multi-pool-pre-allocation default=8)`,
	}, {
		name: "default=8 with its CIDR", families: v4, pre: map[string]int{"default": 8},
		pools: []*tables.PodIPPool{testPool("default", "198.18.0.0/15", "")},
		cidrs: []tables.PoolCIDRs{alloc("default", "198.18.100.0/24")},
	}, {
		name: "dual-stack default with an IPv4 CIDR only", families: dual, pre: map[string]int{"default": 8},
		pools: []*tables.PodIPPool{testPool("default", "198.18.0.0/15", "fd00::/8")},
		cidrs: []tables.PoolCIDRs{alloc("default", "198.18.100.0/24")},
		want:  `waiting for an IPv6 CIDR of the pool "default" (ipam-multi-pool-pre-allocation default=8)`,
	}, {
		name: "blue=8 without default: default is not waited for", families: dual, pre: map[string]int{"blue": 8},
		pools: []*tables.PodIPPool{testPool("default", "198.18.0.0/15", "fd00::/8"), testPool("blue", "198.19.0.0/16", "fd01::/64")},
		cidrs: []tables.PoolCIDRs{alloc("blue", "198.19.0.0/24", "fd01::/120")},
	}, {
		name: "blue=8 before blue's CIDRs came", families: dual, pre: map[string]int{"blue": 8},
		pools: []*tables.PodIPPool{testPool("default", "198.18.0.0/15", "fd00::/8"), testPool("blue", "198.19.0.0/16", "fd01::/64")},
		cidrs: []tables.PoolCIDRs{alloc("default", "198.18.100.0/24", "fd00::/120")},
		want:  `waiting for an IPv4 CIDR of the pool "blue" (ipam-multi-pool-pre-allocation blue=8)`,
	}, {
		name: "an IPv4-only pool on a dual-stack node pre-allocates IPv4 only", families: dual, pre: map[string]int{"blue": 8},
		pools: []*tables.PodIPPool{testPool("blue", "198.19.0.0/16", "")},
		cidrs: []tables.PoolCIDRs{alloc("blue", "198.19.0.0/24")},
	}, {
		name: "a pre-allocated pool that does not exist", families: v4, pre: map[string]int{"blue": 8},
		pools: []*tables.PodIPPool{testPool("default", "198.18.0.0/15", "")}, cidrs: []tables.PoolCIDRs{},
		want: `waiting for the CiliumPodIPPool "blue" (ipam-multi-pool-pre-allocation blue=8), which does not exist`,
	}, {
		name: "a pre-allocated pool being deleted is not waited for", families: dual, pre: map[string]int{"blue": 8},
		pools: []*tables.PodIPPool{deleting}, cidrs: []tables.PoolCIDRs{},
	}, {
		name: "the allocator's reason is passed on", families: v4, pre: map[string]int{"blue": 8},
		pools: []*tables.PodIPPool{testPool("blue", "198.19.0.0/16", "")}, cidrs: []tables.PoolCIDRs{},
		shortfalls: []tables.PodCIDRShortfall{tables.NewPodCIDRShortfall("blue", tables.IPv4, tables.ShortfallExhausted, "no free /24 is left in its IPv4 CIDRs", 8, 0)},
		want: `waiting for an IPv4 CIDR of the pool "blue" (ipam-multi-pool-pre-allocation blue=8): ` +
			`unable to allocate IPv4 CIDRs from pool "blue": no free /24 is left in its IPv4 CIDRs (8 addresses requested, 0 available)`,
	}, {
		name: "a draining CIDR does not count", families: v4, pre: map[string]int{"default": 8},
		pools: []*tables.PodIPPool{testPool("default", "198.19.0.0/16", "")},
		cidrs: []tables.PoolCIDRs{alloc("default", "198.18.100.0/24")},
		want:  `waiting for an IPv4 CIDR of the pool "default" (ipam-multi-pool-pre-allocation default=8)`,
	}, {
		name: "pools are waited for in name order", families: v4, pre: map[string]int{"default": 8, "blue": 4, "zero": 0},
		pools: []*tables.PodIPPool{testPool("default", "198.18.0.0/15", ""), testPool("blue", "198.20.0.0/16", "")},
		cidrs: []tables.PoolCIDRs{alloc("default", "198.18.100.0/24")},
		want:  `waiting for an IPv4 CIDR of the pool "blue" (ipam-multi-pool-pre-allocation blue=4)`,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			s := newState(&memStore{files: map[netip.Addr]entry{}}, tt.families, tt.pre, func() time.Time { return time.Unix(1000, 0) })
			pools := map[string]*tables.PodIPPool{}
			for _, p := range tt.pools {
				pools[p.Name] = p
			}
			s.setPools(pools)
			s.setShortfalls(tt.shortfalls)
			if tt.cidrs != nil {
				s.setCIDRs(tt.cidrs)
			}
			ok, why := s.ready()
			if ok != (tt.want == "") || why != tt.want {
				t.Fatalf("ready = %v, %q; want %v, %q", ok, why, tt.want == "", tt.want)
			}
		})
	}
}

// TestReadyStaysReady: as Cilium's agent, the node waits for its
// pre-allocated pools once; a pool that drains or goes later does not
// turn the node NotReady (its ADDs answer for it).
func TestReadyStaysReady(t *testing.T) {
	s, _, _ := newTestState(tables.IPv4)
	if ok, _ := s.ready(); ok {
		t.Fatal("ready before the CiliumNode was read")
	}
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/24")})
	if ok, why := s.ready(); !ok {
		t.Fatalf("not ready with a CIDR of default: %s", why)
	}
	s.setPools(map[string]*tables.PodIPPool{}) // default deleted: its CIDR drains
	s.setCIDRs(nil)
	if ok, why := s.ready(); !ok {
		t.Fatalf("not ready any more after default went: %s", why)
	}
}

// TestDemandWithoutDefault: a node that pre-allocates only blue asks for
// blue alone; default is asked for once a pod uses or waits for it.
func TestDemandWithoutDefault(t *testing.T) {
	s := newState(&memStore{files: map[netip.Addr]entry{}}, []tables.Family{tables.IPv4}, map[string]int{"blue": 8}, time.Now)
	s.setPools(map[string]*tables.PodIPPool{"default": testPool("default", "198.18.0.0/15", ""), "blue": testPool("blue", "198.19.0.0/16", "")})
	s.setCIDRs(nil)
	if d := s.demand(); len(d) != 1 || d[0].Pool != "blue" || d[0].IPv4 != 8 {
		t.Fatalf("demand = %+v, want blue 8 only", d)
	}
	if ok, why := s.ready(); ok {
		t.Fatal("ready without a CIDR of blue")
	} else if why != `waiting for an IPv4 CIDR of the pool "blue" (ipam-multi-pool-pre-allocation blue=8)` {
		t.Fatalf("waiting for %q", why)
	}
	s.setCIDRs([]tables.PoolCIDRs{alloc("blue", "198.19.0.0/24")})
	if ok, why := s.ready(); !ok {
		t.Fatalf("not ready with a CIDR of blue and none of default: %s", why)
	}
}
