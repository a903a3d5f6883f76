package nodeipam

import (
	"net/netip"
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
)

func TestNeeded(t *testing.T) {
	for _, tt := range []struct{ inUse, pending, pre, want int }{
		{0, 0, 8, 8},  // an idle node keeps pre addresses ready
		{1, 0, 8, 16}, // roundUp(1+0+8, 8)
		{8, 0, 8, 16}, // roundUp(16, 8)
		{9, 0, 8, 24}, // roundUp(17, 8)
		{5, 3, 8, 16}, // pending counts like in use
		{0, 0, 0, 0},  // a pool without an entry asks for nothing idle
		{3, 2, 0, 5},  // ... and for exactly what it uses
		{10, 0, 16, 32},
	} {
		if got := needed(tt.inUse, tt.pending, tt.pre); got != tt.want {
			t.Errorf("needed(inUse %d, pending %d, pre %d) = %d, want %d", tt.inUse, tt.pending, tt.pre, got, tt.want)
		}
	}
}

func TestPreAllocation(t *testing.T) {
	got, err := Config{IPAMMultiPoolPreAllocation: "default=8, green=16"}.preAllocation()
	if err != nil || got["default"] != 8 || got["green"] != 16 || len(got) != 2 {
		t.Fatalf("preAllocation = %v, %v", got, err)
	}
	if got, err := (Config{}).preAllocation(); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
	// Cilium's map options also take a JSON object.
	for _, js := range []string{`{"default":"8","green":"16"}`, ` {"default": 8, "green": 16} `} {
		got, err := Config{IPAMMultiPoolPreAllocation: js}.preAllocation()
		if err != nil || got["default"] != 8 || got["green"] != 16 || len(got) != 2 {
			t.Errorf("preAllocation(%s) = %v, %v", js, got, err)
		}
	}
	if got, err := (Config{IPAMMultiPoolPreAllocation: "{}"}).preAllocation(); err != nil || len(got) != 0 {
		t.Errorf("{}: %v %v", got, err)
	}
	for _, bad := range []string{"default", "default=x", "default=-1", "=8", `{"default":"x"}`, `{"default":-1}`, `{"":"8"}`, `{"default":8`, `{"default":true}`} {
		if _, err := (Config{IPAMMultiPoolPreAllocation: bad}).preAllocation(); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestReleasableHoldsNothing: an empty CIDR with no usable address (a /32
// handed out before the allocator refused such maskSizes, or written by
// hand) covers no demand: once settled it goes, even while the node holds
// less than it asks for.
func TestReleasableHoldsNothing(t *testing.T) {
	s, _, clock := newTestState(tables.IPv4)
	s.setPools(map[string]*tables.PodIPPool{"default": testPool("default", "198.18.0.0/15", ""), "tiny": {Name: "tiny",
		IPv4: &tables.PodPoolFamily{CIDRs: []netip.Prefix{netip.MustParsePrefix("198.20.0.0/28")}, MaskSize: 32}}})
	s.pre["tiny"] = 8
	s.setCIDRs([]tables.PoolCIDRs{alloc("tiny", "198.20.0.0/32", "198.20.0.1/32")})
	clock.t = clock.t.Add(time.Hour)
	r := s.releasable(s.demand(), time.Minute)
	if len(r) != 1 || r[0].Pool != "tiny" || len(r[0].CIDRs) != 2 {
		t.Fatalf("releasable = %v, want both /32s of tiny", r)
	}
}
