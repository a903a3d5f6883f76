package tables

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// TestPodCIDRMaskSizeProblem: the maskSizes whose node CIDRs hold no pod
// (Herald reserves the network address, the gateway and, for IPv4, the
// broadcast address) are named with the reason; the others, down to one
// pod address per CIDR, are fine.
func TestPodCIDRMaskSizeProblem(t *testing.T) {
	for _, tt := range []struct {
		f      Family
		mask   int
		usable uint64 // per node CIDR
		want   string // "" for none
	}{
		{IPv4, 24, 253, ""},
		{IPv4, 29, 5, ""},
		{IPv4, 30, 1, ""},
		{IPv4, 31, 0, "/31 leaves no address for pods: a node CIDR of that size has 2 addresses, and Herald reserves the network address, the gateway (the node's address on the pods' bridge) and the broadcast address of each. /30 is the longest IPv4 maskSize Herald serves"},
		{IPv4, 32, 0, "/32 leaves no address for pods: a node CIDR of that size has 1 address, and Herald reserves the network address"},
		{IPv6, 120, 254, ""},
		{IPv6, 126, 2, ""},
		{IPv6, 127, 0, "/127 leaves no address for pods: a node CIDR of that size has 2 addresses, and Herald reserves the first address (subnet-router anycast) and the gateway (the node's address on the pods' bridge) of each. /126 is the longest IPv6 maskSize Herald serves"},
		{IPv6, 128, 0, "/128 leaves no address for pods: a node CIDR of that size has 1 address"},
		{IPv4, 33, 0, ""}, // out of range: the spec check says so
		{IPv4, 0, 0, ""},
	} {
		got := PodCIDRMaskSizeProblem(tt.f, tt.mask)
		if (got == "") != (tt.want == "") || !strings.HasPrefix(got, tt.want) || strings.Contains(got, "; ") {
			t.Errorf("%s /%d: %q, want %q", tt.f, tt.mask, got, tt.want)
		}
		if tt.mask >= 1 && tt.mask <= 128 && (tt.f == IPv6 || tt.mask <= 32) {
			// The problem is exactly "no usable address".
			if u := PodCIDRUsable(netip.PrefixFrom(zeroAddr(tt.f), tt.mask), 1<<40); u != tt.usable {
				t.Errorf("%s /%d: %d usable, want %d", tt.f, tt.mask, u, tt.usable)
			}
		}
	}
}

// TestPodIPPoolMaskSizeSpecError: a pool whose maskSize leaves no address
// for pods gets a spec error naming the field, the family and the reason
// (the pool's InvalidSpec condition); the family keeps its CIDRs, so the
// counts in its status stay right.
func TestPodIPPoolMaskSizeSpecError(t *testing.T) {
	p := PodIPPoolFromK8s(&v2alpha1.CiliumPodIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: "tiny"},
		Spec: v2alpha1.IPPoolSpec{
			IPv4: &v2alpha1.IPv4PoolSpec{CIDRs: []v2alpha1.PoolCIDR{"10.0.0.0/24"}, MaskSize: 32},
			IPv6: &v2alpha1.IPv6PoolSpec{CIDRs: []v2alpha1.PoolCIDR{"fd00::/120"}, MaskSize: 126},
		},
	})
	want := []string{"spec.ipv4.maskSize: " + PodCIDRMaskSizeProblem(IPv4, 32) + ". Nothing is allocated from the pool's IPv4 CIDRs"}
	if !slices.Equal(p.SpecErrors, want) {
		t.Fatalf("spec errors %q, want %q", p.SpecErrors, want)
	}
	if p.IPv4 == nil || len(p.IPv4.CIDRs) != 1 || p.IPv4.MaskSize != 32 {
		t.Fatalf("IPv4 family %+v, want its CIDR and maskSize kept", p.IPv4)
	}
}

// TestMaskSizeShortfallReadBack: the allocator's answer for such a pool
// reaches the node's agent with its cause.
func TestMaskSizeShortfallReadBack(t *testing.T) {
	sf := NewPodCIDRShortfall("tiny", IPv6, ShortfallMaskSize, PodCIDRMaskSizeProblem(IPv6, 128), 8, 0)
	msg := sf.String()
	if !strings.HasPrefix(msg, `unable to allocate IPv6 CIDRs from pool "tiny": its maskSize /128 leaves no address for pods`) {
		t.Fatalf("message %q", msg)
	}
	got := ParsePodCIDRShortfalls("pool x: something else; " + msg)
	if len(got) != 1 || got[0] != sf {
		t.Fatalf("read back %+v, want %+v", got, sf)
	}
}

// TestTooLargeShortfallReadBack: a demand refused for its size reaches the
// node's agent as such, not as an exhausted pool.
func TestTooLargeShortfallReadBack(t *testing.T) {
	sf := NewPodCIDRShortfall("default", IPv4, ShortfallTooLarge, "3953 /24 CIDRs, more than the 1024 a node may hold of one pool and family", 1000000, 253)
	got := ParsePodCIDRShortfalls(sf.String())
	if len(got) != 1 || got[0] != sf {
		t.Fatalf("read back %+v, want %+v", got, sf)
	}
}
