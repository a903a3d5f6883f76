package l2elector

import (
	"cmp"
	"hash/fnv"
	"math"
	"slices"
)

// placementSlack is how far above the mean a node's share of groups may
// grow (bounded-load consistent hashing): 1.05 keeps the busiest node
// within 5% (plus one group) of the mean, while a node joining or leaving
// moves little more than its fair share.
const placementSlack = 1.05

// Placeable is one group as placement sees it: its name and the live nodes
// that may announce it.
type Placeable struct {
	Group string
	Nodes []string
}

// place assigns every group one of its nodes: rendezvous (highest random
// weight) hashing with bounded loads. Each group ranks its nodes by a hash
// of (group, node), fixed for the pair, and takes the first whose load is
// under the bound; groups are visited in the order of their own hash, so
// the outcome depends only on the set of groups and live nodes, never on
// the order they were learnt in: every agent computes the same owners.
//
// Why this shape: with plain rendezvous hashing a node joining takes only
// the groups it ranks first for (about N/(k+1)) and a node leaving gives
// away only its own, but the loads spread with the square root of N/k; the
// bound caps the busiest node at placementSlack times the mean, and groups
// that would overflow a node fall to their next choice.
func place(groups []Placeable) map[string]string {
	type entry struct {
		Placeable
		order uint64
	}
	entries := make([]entry, 0, len(groups))
	nodes := map[string]bool{}
	demand := 0
	for _, g := range groups {
		if len(g.Nodes) == 0 {
			continue
		}
		entries = append(entries, entry{g, hash64(g.Group, "")})
		for _, n := range g.Nodes {
			nodes[n] = true
		}
		demand++
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.order, b.order), cmp.Compare(a.Group, b.Group))
	})
	bound := int(math.Ceil(placementSlack * float64(demand) / float64(max(len(nodes), 1))))
	load := map[string]int{}
	owners := make(map[string]string, len(entries))
	for _, e := range entries {
		best, bestScore, fallback, fallbackScore := "", uint64(0), "", uint64(0)
		for _, n := range e.Nodes {
			s := hash64(e.Group, n)
			// Ties (never seen in practice) go to the smaller name.
			better := func(cur string, curScore uint64) bool {
				return cur == "" || s > curScore || (s == curScore && n < cur)
			}
			if load[n] < bound && better(best, bestScore) {
				best, bestScore = n, s
			}
			if better(fallback, fallbackScore) {
				fallback, fallbackScore = n, s
			}
		}
		// Every eligible node full (the group's nodes are a small subset
		// that other groups filled): its first choice anyway.
		if best == "" {
			best = fallback
		}
		owners[e.Group] = best
		load[best]++
	}
	return owners
}

// hash64 is FNV-1a of group and node: stable across agents, versions and
// architectures, which the placement depends on.
func hash64(group, node string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(group))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(node))
	return mix(h.Sum64())
}

// mix spreads FNV's output (its low bits are poor for names that differ in
// one character) with the splitmix64 finaliser.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
