package cidrallocator

import (
	"strings"
	"testing"

	"github.com/heraldlb/herald/tables"
)

// TestFillSmallMaskSizes: a maskSize whose node CIDRs hold no pod (IPv4
// /31 and /32, IPv6 /127 and /128) gets no CIDR at all, with a reason
// naming the pool, the family and the maskSize in the node's
// operator-status, and the other family of the pool still serves; the
// smallest maskSizes that hold a pod cost one CIDR per one or two pods.
func TestFillSmallMaskSizes(t *testing.T) {
	const v4tail = "Herald reserves the network address, the gateway (the node's address on the pods' bridge) and the broadcast address of each. " +
		"/30 is the longest IPv4 maskSize Herald serves (8 addresses requested, 0 available)"
	const v6tail = "Herald reserves the first address (subnet-router anycast) and the gateway (the node's address on the pods' bridge) of each. " +
		"/126 is the longest IPv6 maskSize Herald serves (8 addresses requested, 0 available)"
	for _, tt := range []struct {
		name   string
		pool   *tables.PodIPPool
		demand string // pool=v4/v6
		want   string
	}{
		{"IPv4 /32: nothing", pool("tiny", 0, []string{"10.20.0.0/28"}, 32, nil, 0), "tiny=8/0",
			`|unable to allocate IPv4 CIDRs from pool "tiny": its maskSize /32 leaves no address for pods: a node CIDR of that size has 1 address, and ` + v4tail},
		{"IPv4 /31: nothing", pool("tiny", 0, []string{"10.20.0.0/28"}, 31, nil, 0), "tiny=8/0",
			`|unable to allocate IPv4 CIDRs from pool "tiny": its maskSize /31 leaves no address for pods: a node CIDR of that size has 2 addresses, and ` + v4tail},
		{"IPv6 /128: nothing", pool("tiny", 0, nil, 0, []string{"fd00:20::/124"}, 128), "tiny=0/8",
			`|unable to allocate IPv6 CIDRs from pool "tiny": its maskSize /128 leaves no address for pods: a node CIDR of that size has 1 address, and ` + v6tail},
		{"IPv6 /127: nothing", pool("tiny", 0, nil, 0, []string{"fd00:20::/124"}, 127), "tiny=0/8",
			`|unable to allocate IPv6 CIDRs from pool "tiny": its maskSize /127 leaves no address for pods: a node CIDR of that size has 2 addresses, and ` + v6tail},
		{"the other family still serves", pool("tiny", 0, []string{"10.20.0.0/28"}, 32, []string{"fd00:20::/104"}, 120), "tiny=8/8",
			`fd00:20::/120(tiny)|unable to allocate IPv4 CIDRs from pool "tiny": its maskSize /32 leaves no address for pods: a node CIDR of that size has 1 address, and ` + v4tail},
		{"IPv4 /30 holds 1 pod: 3 addresses take 3 CIDRs", pool("small", 0, []string{"10.20.0.0/28"}, 30, nil, 0), "small=3/0",
			"10.20.0.0/30(small) 10.20.0.4/30(small) 10.20.0.8/30(small)|"},
		{"IPv4 /30 runs out after its 4 CIDRs, and says so", pool("small", 0, []string{"10.20.0.0/28"}, 30, nil, 0), "small=8/0",
			"10.20.0.0/30(small) 10.20.0.4/30(small) 10.20.0.8/30(small) 10.20.0.12/30(small)|" +
				`unable to allocate IPv4 CIDRs from pool "small": no free /30 is left in its IPv4 CIDRs (8 addresses requested, 4 available)`},
		{"IPv6 /126 holds 2 pods", pool("small", 0, nil, 0, []string{"fd00:20::/120"}, 126), "small=0/3",
			"fd00:20::/126(small) fd00:20::4/126(small)|"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "a")
			w.e.UpsertPool(tt.pool)
			w.e.UpsertNode(node("a", []string{tt.demand}))
			expect(t, "decision for a", w.adds("a"), tt.want)
		})
	}
}

// TestMaskSizeHeldCIDRsStay: CIDRs of such a maskSize that a node already
// holds (handed out before the allocator refused them, or written by
// hand) stay the node's: its agent gives them back, nothing takes them.
func TestMaskSizeHeldCIDRsStay(t *testing.T) {
	w := newWorld(t, "a")
	w.e.UpsertPool(pool("tiny", 0, []string{"10.20.0.0/28"}, 32, nil, 0))
	w.e.UpsertNode(node("a", []string{"tiny=8/0"}, "tiny=10.20.0.0/32", "tiny=10.20.0.1/32"))
	if got := w.adds("a"); !strings.HasPrefix(got, "|unable to allocate IPv4 CIDRs from pool \"tiny\": its maskSize /32") {
		t.Fatalf("decision for a: %q, want no CIDR added and the maskSize named", got)
	}
	if st := w.statuses["tiny"]; st.IPv4 == nil || st.IPv4.CIDRsAllocated != 2 {
		t.Fatalf("pool status %+v, want the 2 CIDRs the node holds counted", st)
	}
}
