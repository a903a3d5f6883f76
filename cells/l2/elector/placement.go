package elector

import (
	"cmp"
	"hash/fnv"
	"math"
	"slices"
)

// placementSlack is how far above the mean a node may be loaded when a
// group's own nodes are all full (see place).
const placementSlack = 1.05

// Placeable is one group as placement sees it: its name, the live nodes
// that may announce it, and the node that holds it now ("" if none, or if
// it may not keep it).
type Placeable struct {
	Group  string
	Nodes  []string
	Holder string
}

// place assigns every group one of its nodes, sticky and balanced. With a
// share of ceil(groups / nodes) per node:
//
//  1. a group stays with its holder while the holder may announce it and
//     carries less than its share;
//  2. every other group goes by rendezvous (highest random weight)
//     hashing: it ranks its nodes by a hash of (group, node), fixed for the
//     pair, and takes the first that carries less than its share;
//  3. a group none of whose nodes has room (its nodes are a few that other
//     groups filled) takes the first under placementSlack times the share,
//     else its first choice.
//
// Groups are visited in the order of their own hash in every pass, so the
// outcome depends only on the groups, their holders and the live nodes,
// never on the order they were learnt in: every agent that reads the same
// Leases computes the same owners.
//
// What it gives: no node carries more than its share while the groups may
// go anywhere; a node leaving moves exactly its own groups (the share only
// grows); a node joining lowers the share, and the groups over it, about
// N/(k+1), move to the only node under it, the new one.
func place(groups []Placeable) map[string]string {
	type entry struct {
		Placeable
		order uint64
	}
	entries := make([]entry, 0, len(groups))
	nodes := map[string]bool{}
	for _, g := range groups {
		if len(g.Nodes) == 0 {
			continue
		}
		entries = append(entries, entry{g, hash64(g.Group, "")})
		for _, n := range g.Nodes {
			nodes[n] = true
		}
	}
	slices.SortFunc(entries, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.order, b.order), cmp.Compare(a.Group, b.Group))
	})
	mean := float64(len(entries)) / float64(max(len(nodes), 1))
	share, bound := int(math.Ceil(mean)), int(math.Ceil(placementSlack*mean))
	load := map[string]int{}
	owners := make(map[string]string, len(entries))
	assign := func(e entry, n string) {
		owners[e.Group] = n
		load[n]++
	}
	for _, e := range entries {
		if e.Holder != "" && slices.Contains(e.Nodes, e.Holder) && load[e.Holder] < share {
			assign(e, e.Holder)
		}
	}
	// best is the node of e ranked first among those under limit ("" if
	// none).
	best := func(e entry, limit int) string {
		choice, score := "", uint64(0)
		for _, n := range e.Nodes {
			s := hash64(e.Group, n)
			// Ties (never seen in practice) go to the smaller name.
			if load[n] < limit && (choice == "" || s > score || (s == score && n < choice)) {
				choice, score = n, s
			}
		}
		return choice
	}
	var rest []entry
	for _, e := range entries {
		if _, ok := owners[e.Group]; ok {
			continue
		}
		if n := best(e, share); n != "" {
			assign(e, n)
		} else {
			rest = append(rest, e)
		}
	}
	for _, e := range rest {
		n := best(e, bound)
		if n == "" {
			n = best(e, math.MaxInt)
		}
		assign(e, n)
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
