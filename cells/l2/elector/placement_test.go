package elector

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func nodeNames(k int) []string {
	out := make([]string, k)
	for i := range out {
		out[i] = fmt.Sprintf("node%d", i+1)
	}
	return out
}

func groupsOver(n int, nodes []string) []Placeable {
	gs := make([]Placeable, n)
	for i := range gs {
		gs[i] = Placeable{Group: fmt.Sprintf("cilium-l2announce-default-svc-%d", i), Nodes: nodes}
	}
	return gs
}

func loads(owners map[string]string) map[string]int {
	l := map[string]int{}
	for _, n := range owners {
		l[n]++
	}
	return l
}

func moved(a, b map[string]string) int {
	n := 0
	for g, o := range a {
		if b[g] != o {
			n++
		}
	}
	return n
}

func TestPlacementBalanced(t *testing.T) {
	for _, tc := range []struct{ services, nodes int }{{1000, 3}, {1000, 10}, {100, 3}, {10, 3}} {
		t.Run(fmt.Sprintf("%d/%d", tc.services, tc.nodes), func(t *testing.T) {
			owners := place(groupsOver(tc.services, nodeNames(tc.nodes)))
			if len(owners) != tc.services {
				t.Fatalf("%d of %d groups placed", len(owners), tc.services)
			}
			l := loads(owners)
			mean := float64(tc.services) / float64(tc.nodes)
			busiest := 0
			for _, v := range l {
				busiest = max(busiest, v)
			}
			// The bound: 5% over the mean, rounded up.
			if limit := int(placementSlack*mean + 0.999999); busiest > limit {
				t.Errorf("busiest node has %d groups, bound %d (loads %v)", busiest, limit, l)
			}
			if tc.services >= 1000 && float64(busiest)/mean > 1.1 {
				t.Errorf("max/mean %.3f > 1.1 (loads %v)", float64(busiest)/mean, l)
			}
		})
	}
}

// Every agent must compute the same owners whatever order it learnt the
// groups and nodes in.
func TestPlacementIgnoresOrder(t *testing.T) {
	gs := groupsOver(300, nodeNames(5))
	want := place(gs)
	r := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := slices.Clone(gs)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		for i := range shuffled {
			ns := slices.Clone(shuffled[i].Nodes)
			r.Shuffle(len(ns), func(a, b int) { ns[a], ns[b] = ns[b], ns[a] })
			shuffled[i].Nodes = ns
		}
		if got := place(shuffled); moved(want, got) != 0 {
			t.Fatalf("%d groups placed differently after shuffling", moved(want, got))
		}
	}
}

// withHolders makes each group held by its owner in owners, as after the
// handovers placement asked for.
func withHolders(gs []Placeable, owners map[string]string) []Placeable {
	out := slices.Clone(gs)
	for i := range out {
		out[i].Holder = owners[out[i].Group]
	}
	return out
}

// A node joining takes about its share, N/(k+1), and the others keep the
// rest; a node leaving gives away exactly its own groups. Placement is
// sticky: groups stay with their holders while the bound allows.
func TestPlacementSticky(t *testing.T) {
	for _, k := range []int{3, 10} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			const n = 1000
			before := place(groupsOver(n, nodeNames(k)))
			// Placing again with the holders changes nothing.
			if again := place(withHolders(groupsOver(n, nodeNames(k)), before)); moved(before, again) != 0 {
				t.Fatalf("placing again with the holders moved %d groups", moved(before, again))
			}
			joined := nodeNames(k + 1)[k]
			after := place(withHolders(groupsOver(n, nodeNames(k+1)), before))
			share := n / (k + 1)
			m := moved(before, after)
			t.Logf("join: %d of %d groups move (share of the new node %d; it has %d)", m, n, share, loads(after)[joined])
			if m > share*13/10 {
				t.Errorf("join moved %d groups, more than 1.3 × the new node's share %d", m, share)
			}
			if l := loads(after)[joined]; l < share*8/10 {
				t.Errorf("the new node got %d groups, less than 0.8 × its share %d", l, share)
			}

			gone := nodeNames(k + 1)[0]
			again := place(withHolders(groupsOver(n, nodeNames(k + 1)[1:]), after))
			lost := loads(after)[gone]
			m = moved(after, again)
			t.Logf("leave: %d of %d groups move (the leaving node had %d)", m, n, lost)
			if m != lost {
				t.Errorf("leave moved %d groups, the node that left had %d: others moved too", m, lost)
			}
		})
	}
}

func TestPlacementRestrictedNodes(t *testing.T) {
	all := nodeNames(4)
	gs := groupsOver(200, all)
	// A quarter of the groups may only go to node4 (a policy's node
	// selector, or the only node with a ready endpoint).
	for i := range 50 {
		gs[i].Nodes = []string{"node4"}
	}
	gs = append(gs, Placeable{Group: "nobody", Nodes: nil})
	owners := place(gs)
	for i := range 50 {
		if owners[gs[i].Group] != "node4" {
			t.Fatalf("group %s placed on %s, only node4 may announce it", gs[i].Group, owners[gs[i].Group])
		}
	}
	if _, ok := owners["nobody"]; ok {
		t.Fatalf("a group without nodes got an owner")
	}
	if len(owners) != 200 {
		t.Fatalf("%d groups placed, want 200", len(owners))
	}
}

func BenchmarkPlace(b *testing.B) {
	gs := groupsOver(1000, nodeNames(10))
	for b.Loop() {
		place(gs)
	}
}

// BenchmarkPlacementQuality reports, for 1000 groups over k nodes, the
// busiest node's share over the mean and the groups that move when a node
// joins (k → k+1) or leaves (k+1 → k), against the fair share N/(k+1) and
// the leaving node's own groups. It also times a placement.
func BenchmarkPlacementQuality(b *testing.B) {
	const n = 1000
	for _, k := range []int{3, 10} {
		b.Run(fmt.Sprintf("groups=%d/nodes=%d", n, k), func(b *testing.B) {
			gs := groupsOver(n, nodeNames(k))
			var owners map[string]string
			for b.Loop() {
				owners = place(gs)
			}
			busiest := 0
			for _, l := range loads(owners) {
				busiest = max(busiest, l)
			}
			grown := place(withHolders(groupsOver(n, nodeNames(k+1)), owners))
			leaving := nodeNames(k + 1)[0]
			shrunk := place(withHolders(groupsOver(n, nodeNames(k + 1)[1:]), grown))
			b.ReportMetric(float64(busiest)/(float64(n)/float64(k)), "max/mean")
			b.ReportMetric(float64(moved(owners, grown)), "moved-on-join")
			b.ReportMetric(float64(n)/float64(k+1), "fair-share")
			b.ReportMetric(float64(moved(grown, shrunk)), "moved-on-leave")
			b.ReportMetric(float64(loads(grown)[leaving]), "leaver-had")
		})
	}
}
