package iprange

import (
	"github.com/heraldlb/herald/tables"
	"math/big"
	"net/netip"
	"testing"
)

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestAllocateLowestFirst(t *testing.T) {
	first, last := tables.PrefixRange(netip.MustParsePrefix("10.0.0.0/29"))
	r := New(first, last, false)
	var got []string
	for {
		a, ok := r.Allocate()
		if !ok {
			break
		}
		got = append(got, a.String())
	}
	if len(got) != 8 || got[0] != "10.0.0.0" || got[7] != "10.0.0.7" {
		t.Fatalf("allocated %v", got)
	}
	if r.Available().Sign() != 0 || r.Used() != 8 {
		t.Fatalf("available %s used %d", r.Available(), r.Used())
	}
	// Releasing two holes: the lower one is handed out first.
	r.Release(mustAddr("10.0.0.5"))
	r.Release(mustAddr("10.0.0.2"))
	if a, _ := r.Allocate(); a.String() != "10.0.0.2" {
		t.Fatalf("got %s, want the lowest free 10.0.0.2", a)
	}
	if a, _ := r.Allocate(); a.String() != "10.0.0.5" {
		t.Fatalf("got %s, want 10.0.0.5", a)
	}
}

func TestReserveFirstLast(t *testing.T) {
	tests := []struct {
		cidr      string
		reserve   bool
		total     int64
		firstFree string
	}{
		{"10.0.0.0/24", true, 254, "10.0.0.1"},
		{"10.0.0.0/24", false, 256, "10.0.0.0"},
		{"10.0.0.0/31", true, 2, "10.0.0.0"},
		{"10.0.0.0/32", true, 1, "10.0.0.0"},
		{"2001:db8::/127", true, 2, "2001:db8::"},
		{"2001:db8::/128", true, 1, "2001:db8::"},
		{"2001:db8::/126", true, 2, "2001:db8::1"},
	}
	for _, tt := range tests {
		first, last := tables.PrefixRange(netip.MustParsePrefix(tt.cidr))
		r := New(first, last, tt.reserve)
		if r.Total().Cmp(big.NewInt(tt.total)) != 0 {
			t.Errorf("%s reserve=%v: total %s, want %d", tt.cidr, tt.reserve, r.Total(), tt.total)
		}
		if a, _ := r.Allocate(); a.String() != tt.firstFree {
			t.Errorf("%s reserve=%v: first allocation %s, want %s", tt.cidr, tt.reserve, a, tt.firstFree)
		}
	}
}

func TestClaim(t *testing.T) {
	first, last := tables.PrefixRange(netip.MustParsePrefix("10.0.0.0/24"))
	r := New(first, last, true)
	if err := r.Claim(mustAddr("10.0.0.0"), false); err != ErrReserved {
		t.Fatalf("claim of reserved first address: %v", err)
	}
	// An address held before the reservation was switched on is restored.
	if err := r.Claim(mustAddr("10.0.0.0"), true); err != nil {
		t.Fatalf("restoring a reserved address: %v", err)
	}
	if err := r.Claim(mustAddr("10.0.0.0"), true); err != ErrInUse {
		t.Fatalf("double claim: %v", err)
	}
	if err := r.Claim(mustAddr("10.0.1.0"), true); err != ErrOutOfRange {
		t.Fatalf("claim outside: %v", err)
	}
	if err := r.Claim(mustAddr("2001:db8::"), true); err != ErrOutOfRange {
		t.Fatalf("claim of other family: %v", err)
	}
	if err := r.Claim(mustAddr("10.0.0.3"), false); err != nil {
		t.Fatal(err)
	}
	// The reserved first address is in use, but it does not count against
	// the 254 allocatable addresses.
	if r.Available().Int64() != 253 || r.Used() != 2 {
		t.Fatalf("available %s used %d", r.Available(), r.Used())
	}
	if a, _ := r.Allocate(); a.String() != "10.0.0.1" {
		t.Fatalf("allocate: %s", a)
	}
	var all []string
	r.All(func(a netip.Addr) bool { all = append(all, a.String()); return true })
	if len(all) != 3 || all[0] != "10.0.0.0" || all[1] != "10.0.0.1" || all[2] != "10.0.0.3" {
		t.Fatalf("All: %v", all)
	}
}

func TestEdgesOfAddressSpace(t *testing.T) {
	r := New(mustAddr("255.255.255.254"), mustAddr("255.255.255.255"), false)
	for i := 0; i < 2; i++ {
		if _, ok := r.Allocate(); !ok {
			t.Fatal("allocation failed")
		}
	}
	if _, ok := r.Allocate(); ok {
		t.Fatal("allocated past the end of the address space")
	}
	r0 := New(mustAddr("0.0.0.0"), mustAddr("0.0.0.1"), false)
	if err := r0.Claim(mustAddr("0.0.0.1"), false); err != nil {
		t.Fatal(err)
	}
	if a, _ := r0.Allocate(); a.String() != "0.0.0.0" {
		t.Fatalf("got %s", a)
	}
	r0.Release(mustAddr("0.0.0.0"))
	if !r0.InUse(mustAddr("0.0.0.1")) || r0.InUse(mustAddr("0.0.0.0")) {
		t.Fatal("release split wrong")
	}
}

// TestRandomAgainstModel cross-checks the interval set against a plain map.
func TestRandomAgainstModel(t *testing.T) {
	first, last := tables.PrefixRange(netip.MustParsePrefix("10.0.0.0/26"))
	r := New(first, last, false)
	model := map[netip.Addr]bool{}
	seed := uint32(1)
	rnd := func(n int) int { seed = seed*1664525 + 1013904223; return int(seed>>8) % n }
	for i := 0; i < 20000; i++ {
		a := first
		for k := rnd(64); k > 0; k-- {
			a = a.Next()
		}
		switch rnd(3) {
		case 0:
			if got := r.Release(a); got != model[a] {
				t.Fatalf("release %s: %v, model %v", a, got, model[a])
			}
			delete(model, a)
		case 1:
			err := r.Claim(a, false)
			if (err == nil) == model[a] {
				t.Fatalf("claim %s: %v, model %v", a, err, model[a])
			}
			model[a] = true
		default:
			got, ok := r.Allocate()
			want := first
			for model[want] && want != last {
				want = want.Next()
			}
			if model[want] {
				if ok {
					t.Fatalf("allocated %s from a full range", got)
				}
				continue
			}
			if !ok || got != want {
				t.Fatalf("allocate: %s, want lowest free %s", got, want)
			}
			model[got] = true
		}
		if r.Used() != uint64(len(model)) {
			t.Fatalf("used %d, model %d", r.Used(), len(model))
		}
	}
}
