package iprange

import (
	"github.com/heraldlb/herald/tables"
	"net/netip"
	"testing"
)

// BenchmarkAllocate measures sequential allocations out of a large block;
// make bench-alloc reports ns/op and B/op for 100k allocations.
func BenchmarkAllocate(b *testing.B) {
	for _, cidr := range []string{"10.0.0.0/8", "2004::/64"} {
		b.Run(cidr, func(b *testing.B) {
			first, last := tables.PrefixRange(netip.MustParsePrefix(cidr))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r := New(first, last, false)
				for j := 0; j < 100_000; j++ {
					if _, ok := r.Allocate(); !ok {
						b.Fatal("out of addresses")
					}
				}
			}
		})
	}
}

// BenchmarkAllocateFragmented allocates into a block whose every other
// address is held, the worst case for the interval set.
func BenchmarkAllocateFragmented(b *testing.B) {
	first, last := tables.PrefixRange(netip.MustParsePrefix("10.0.0.0/8"))
	r := New(first, last, false)
	a := first
	for j := 0; j < 200_000; j++ {
		_ = r.Claim(a, false)
		a = a.Next().Next()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x, _ := r.Allocate()
		r.Release(x)
	}
}
