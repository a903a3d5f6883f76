package noderoutes

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/heraldlb/herald/tables"
)

func TestRoutesOf(t *testing.T) {
	cn := &tables.CiliumNode{Name: "node2", Allocated: []tables.PoolCIDRs{
		{Pool: "default", CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.101.0/24"), netip.MustParsePrefix("fd00:18:101::/120")}},
		{Pool: "green", CIDRs: []netip.Prefix{netip.MustParsePrefix("198.18.201.0/24")}},
	}}
	v4only := &tables.Node{Name: "node2", InternalIPs: []netip.Addr{netip.MustParseAddr("198.18.0.12")}}
	routes, missing := routesOf(cn, v4only)
	got := ""
	for _, r := range routes {
		got += fmt.Sprintf("%s via %s (%s); ", r.Dst, r.Via, r.Pool)
	}
	if want := "198.18.101.0/24 via 198.18.0.12 (default); 198.18.201.0/24 via 198.18.0.12 (green); "; got != want {
		t.Fatalf("routes: %s, want %s", got, want)
	}
	if len(missing) != 1 || missing[0] != tables.IPv6 {
		t.Fatalf("missing = %v, want [IPv6]", missing)
	}
	if r, m := routesOf(cn, nil); len(r) != 0 || len(m) != 2 {
		t.Fatalf("without a Node: %v %v", r, m)
	}
}
