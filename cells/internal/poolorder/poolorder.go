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

// Kind is which allocator a pool belongs to, for the order between the
// two kinds of pools.
type Kind int

const (
	PodPool Kind = iota // a CiliumPodIPPool (the pod CIDR allocator's)
	LBPool              // a CiliumLoadBalancerIPPool (LB IPAM's)
)

// Ref is a pool as the order between kinds sees it.
type Ref struct {
	Kind    Kind
	Name    string
	Created time.Time
}

// Same reports whether r and o are the same pool of the same age (time
// values are compared as instants, whatever their location).
func (r Ref) Same(o Ref) bool {
	return r.Kind == o.Kind && r.Name == o.Name && r.Created.Equal(o.Created)
}

// Older reports whether a was created before b: by creation time, then by
// name, and a pod pool before an LB pool of the same name and second. An LB
// pool and a pod pool that overlap would hand one address to a Service and
// to a pod; each allocator marks its pool conflicting when the other kind's
// is older, and since both decide with this one order, exactly one of the
// two pools stops handing out addresses.
func Older(a, b Ref) bool {
	return cmp.Or(a.Created.Compare(b.Created), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Kind, b.Kind)) < 0
}
