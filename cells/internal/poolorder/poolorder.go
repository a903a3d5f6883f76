// Package poolorder is the order in which both allocators (LB IPAM's and
// the pod CIDR allocator) see their pools: oldest first, by creation, ties
// broken by name. An older pool wins an overlap with a newer one, and is
// tried first, so every leader, in any term, decides the same way.
package poolorder

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// Sorted returns the pools, reusing dst's storage, oldest first; key gives
// a pool's creation time and name.
func Sorted[P any](dst []P, pools map[string]P, key func(P) (time.Time, string)) []P {
	dst = slices.AppendSeq(dst[:0], maps.Values(pools))
	slices.SortFunc(dst, func(a, b P) int {
		ta, na := key(a)
		tb, nb := key(b)
		return cmp.Or(ta.Compare(tb), cmp.Compare(na, nb))
	})
	return dst
}
