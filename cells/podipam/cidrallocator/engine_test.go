package cidrallocator

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func pool(name string, age int, v4 []string, mask4 int, v6 []string, mask6 int) *tables.PodIPPool {
	p := &tables.PodIPPool{Name: name, UID: "uid-" + name, CreationTimestamp: t0.Add(time.Duration(age) * time.Second)}
	if v4 != nil {
		p.IPv4 = &tables.PodPoolFamily{MaskSize: mask4}
		for _, c := range v4 {
			p.IPv4.CIDRs = append(p.IPv4.CIDRs, netip.MustParsePrefix(c))
		}
	}
	if v6 != nil {
		p.IPv6 = &tables.PodPoolFamily{MaskSize: mask6}
		for _, c := range v6 {
			p.IPv6.CIDRs = append(p.IPv6.CIDRs, netip.MustParsePrefix(c))
		}
	}
	return p
}

// node builds a CiliumNode: demands as "pool=v4/v6", holdings as
// "pool=cidr".
func node(name string, demands []string, held ...string) *tables.CiliumNode {
	n := &tables.CiliumNode{Name: name, UID: "uid-" + name, CreationTimestamp: t0}
	for _, d := range demands {
		var pd tables.PoolDemand
		if _, err := fmt.Sscanf(strings.Replace(d, "=", " ", 1), "%s %d/%d", &pd.Pool, &pd.IPv4, &pd.IPv6); err != nil {
			panic(d)
		}
		n.Requested = append(n.Requested, pd)
	}
	for _, h := range held {
		p, c, _ := strings.Cut(h, "=")
		n.Allocated = addTo(n.Allocated, p, netip.MustParsePrefix(c))
	}
	return n
}

type world struct {
	t   *testing.T
	e   *Engine
	now time.Time
	// decisions and statuses, latest per key
	decisions map[string]*tables.PodCIDRDecision
	statuses  map[string]*tables.PodIPPoolStatus
}

func newWorld(t *testing.T, nodes ...string) *world {
	w := &world{t: t, e: NewEngine(), now: t0.Add(time.Hour), decisions: map[string]*tables.PodCIDRDecision{}, statuses: map[string]*tables.PodIPPoolStatus{}}
	for _, n := range nodes {
		w.e.SetK8sNode(n, true)
	}
	return w
}

func (w *world) eval() Result {
	r := w.e.Evaluate(w.now)
	for _, d := range r.Decisions {
		w.decisions[d.Node] = d
	}
	for _, n := range r.DeletedDecisions {
		delete(w.decisions, n)
	}
	for _, s := range r.PoolStatuses {
		w.statuses[s.Name] = s
	}
	return r
}

// adds renders a node's decision as "cidr(pool) ...|error".
func (w *world) adds(name string) string {
	w.t.Helper()
	w.eval()
	d := w.decisions[name]
	if d == nil {
		return "<none>"
	}
	var parts []string
	for _, a := range d.Add {
		for _, c := range a.CIDRs {
			parts = append(parts, fmt.Sprintf("%s(%s)", c, a.Pool))
		}
	}
	return strings.Join(parts, " ") + "|" + d.Error
}

// apply makes the node's CiliumNode list what the decision added, as the
// writer would.
func (w *world) apply(name string) {
	w.t.Helper()
	w.eval()
	d := w.decisions[name]
	n := w.e.nodes[name].row
	cp := *n
	cp.Allocated = slices.Clone(n.Allocated)
	for _, a := range d.Add {
		for _, c := range a.CIDRs {
			cp.Allocated = addTo(slices.Clone(cp.Allocated), a.Pool, c)
		}
	}
	w.e.UpsertNode(&cp)
}

func expect(t *testing.T, what, got, want string) {
	t.Helper()
	if got != want {
		t.Errorf("%s:\n  got  %q\n  want %q", what, got, want)
	}
}

func TestFillsDemand(t *testing.T) {
	tests := []struct {
		name  string
		pools []*tables.PodIPPool
		nodes []*tables.CiliumNode
		node  string
		want  string
	}{
		{"one CIDR covers 10 addresses",
			[]*tables.PodIPPool{pool("default", 0, []string{"10.20.0.0/16"}, 24, nil, 0)},
			[]*tables.CiliumNode{node("a", []string{"default=10/0"})}, "a", "10.20.0.0/24(default)|"},
		{"a /24 gives 253 addresses: 254 need two",
			[]*tables.PodIPPool{pool("default", 0, []string{"10.20.0.0/16"}, 24, nil, 0)},
			[]*tables.CiliumNode{node("a", []string{"default=254/0"})}, "a", "10.20.0.0/24(default) 10.20.1.0/24(default)|"},
		{"what a node holds counts",
			[]*tables.PodIPPool{pool("default", 0, []string{"10.20.0.0/16"}, 24, nil, 0)},
			[]*tables.CiliumNode{node("a", []string{"default=200/0"}, "default=10.20.7.0/24")}, "a", "|"},
		{"held elsewhere is skipped, in order",
			[]*tables.PodIPPool{pool("default", 0, []string{"10.20.0.0/16"}, 24, nil, 0)},
			[]*tables.CiliumNode{node("a", nil, "default=10.20.0.0/24", "default=10.20.2.0/24"), node("b", []string{"default=8/0"})}, "b", "10.20.1.0/24(default)|"},
		{"a larger holding is jumped over",
			[]*tables.PodIPPool{pool("default", 0, []string{"10.20.0.0/16"}, 24, nil, 0)},
			[]*tables.CiliumNode{node("a", nil, "default=10.20.0.0/22"), node("b", []string{"default=8/0"})}, "b", "10.20.4.0/24(default)|"},
		{"a holding of another pool counts too",
			[]*tables.PodIPPool{pool("default", 0, []string{"10.20.0.0/16"}, 24, nil, 0)},
			[]*tables.CiliumNode{node("a", nil, "gone=10.20.0.0/24"), node("b", []string{"default=8/0"})}, "b", "10.20.1.0/24(default)|"},
		{"dual stack",
			[]*tables.PodIPPool{pool("default", 0, []string{"10.20.0.0/16"}, 24, []string{"fd00:20::/104"}, 120)},
			[]*tables.CiliumNode{node("a", []string{"default=8/8"})}, "a", "10.20.0.0/24(default) fd00:20::/120(default)|"},
		{"second CIDR of the pool when the first is full",
			[]*tables.PodIPPool{pool("default", 0, []string{"10.20.0.0/24", "10.30.0.0/24"}, 25, nil, 0)},
			[]*tables.CiliumNode{node("a", nil, "default=10.20.0.0/25", "default=10.20.0.128/25"), node("b", []string{"default=8/0"})}, "b", "10.30.0.0/25(default)|"},
		{"unknown pool",
			[]*tables.PodIPPool{pool("default", 0, []string{"10.20.0.0/16"}, 24, nil, 0)},
			[]*tables.CiliumNode{node("a", []string{"blue=8/0"})}, "a", `|pool "blue" does not exist`},
		{"family the pool lacks",
			[]*tables.PodIPPool{pool("default", 0, []string{"10.20.0.0/16"}, 24, nil, 0)},
			[]*tables.CiliumNode{node("a", []string{"default=8/8"})}, "a", `10.20.0.0/24(default)|pool "default" has no IPv6 CIDRs`},
		{"exhausted",
			[]*tables.PodIPPool{pool("default", 0, []string{"10.20.0.0/23"}, 24, nil, 0)},
			[]*tables.CiliumNode{node("a", nil, "default=10.20.0.0/24", "default=10.20.1.0/24"), node("b", []string{"default=8/0"})}, "b",
			`|unable to allocate IPv4 CIDRs from pool "default": no free /24 is left in its IPv4 CIDRs (8 addresses requested, 0 available)`},
		{"conflicting pool hands out nothing",
			[]*tables.PodIPPool{pool("old", 0, []string{"10.20.0.0/16"}, 24, nil, 0), pool("new", 1, []string{"10.20.128.0/17"}, 24, nil, 0)},
			[]*tables.CiliumNode{node("a", []string{"new=8/0"})}, "a",
			`|unable to allocate IPv4 CIDRs from pool "new": the pool conflicts with another one (Pool conflicts since CIDR '10.20.128.0/17' overlaps CIDR '10.20.0.0/16' from CiliumPodIPPool 'old') (8 addresses requested, 0 available)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, "a", "b")
			for _, p := range tt.pools {
				w.e.UpsertPool(p)
			}
			for _, n := range tt.nodes {
				w.e.UpsertNode(n)
			}
			expect(t, "decision for "+tt.node, w.adds(tt.node), tt.want)
		})
	}
}

func TestPendingIsHeldUntilListed(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.e.UpsertPool(pool("default", 0, []string{"10.20.0.0/16"}, 24, nil, 0))
	w.e.UpsertNode(node("a", []string{"default=8/0"}))
	expect(t, "a", w.adds("a"), "10.20.0.0/24(default)|")
	// b asks before a's CiliumNode shows the CIDR: it must not get it.
	w.e.UpsertNode(node("b", []string{"default=8/0"}))
	expect(t, "b", w.adds("b"), "10.20.1.0/24(default)|")
	// a's CiliumNode shows it: nothing left to add.
	w.apply("a")
	expect(t, "a listed", w.adds("a"), "|")
	// An unrelated update of a (an older version without the CIDR would
	// free it; the current one keeps it).
	w.e.UpsertNode(node("a", []string{"default=9/0"}, "default=10.20.0.0/24"))
	expect(t, "a", w.adds("a"), "|")
}

func TestReleaseFreesForOthers(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.e.UpsertPool(pool("default", 0, []string{"10.20.0.0/24"}, 24, nil, 0))
	w.e.UpsertNode(node("a", []string{"default=8/0"}, "default=10.20.0.0/24"))
	w.e.UpsertNode(node("b", []string{"default=8/0"}))
	if got := w.adds("b"); !strings.HasPrefix(got, "|unable to allocate") {
		t.Fatalf("b while a holds the only CIDR: %q", got)
	}
	if st := w.statuses["default"]; st == nil || st.Exhausted != "no free CIDR left for: b needs 8 IPv4 addresses, has 0" {
		t.Fatalf("pool status: %+v", st)
	}
	// a's agent released it (drained, demand 0).
	w.e.UpsertNode(node("a", nil))
	expect(t, "b after a released", w.adds("b"), "10.20.0.0/24(default)|")
	if st := w.statuses["default"]; st.Exhausted != "" {
		t.Fatalf("pool still exhausted: %q", st.Exhausted)
	}
}

func TestClaimedTwiceIsLoudAndKept(t *testing.T) {
	w := newWorld(t, "a", "b", "c")
	w.e.UpsertPool(pool("default", 0, []string{"10.20.0.0/16"}, 24, nil, 0))
	w.e.UpsertNode(node("a", nil, "default=10.20.0.0/24"))
	w.e.UpsertNode(node("b", nil, "default=10.20.0.0/24"))
	w.e.UpsertNode(node("c", []string{"default=8/0"}))
	expect(t, "a", w.adds("a"), `|CIDR 10.20.0.0/24 is also allocated to node b (pool "default"): remove it from one of the two CiliumNodes`)
	expect(t, "b", w.adds("b"), `|CIDR 10.20.0.0/24 is also allocated to node a (pool "default"): remove it from one of the two CiliumNodes`)
	expect(t, "c", w.adds("c"), "10.20.1.0/24(default)|")
	if st := w.statuses["default"]; st.ClaimedTwice != "CIDRs allocated to two nodes: 10.20.0.0/24 (nodes a and b)" {
		t.Fatalf("pool status: %q", st.ClaimedTwice)
	}
	// Fixed by hand on b: the errors clear.
	w.e.UpsertNode(node("b", nil))
	expect(t, "a fixed", w.adds("a"), "|")
	if st := w.statuses["default"]; st.ClaimedTwice != "" {
		t.Fatalf("still claimed twice: %q", st.ClaimedTwice)
	}
}

func TestRemovedCIDRStaysWithItsNode(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.e.UpsertPool(pool("default", 0, []string{"10.20.0.0/24", "10.30.0.0/24", "10.40.0.0/24"}, 24, nil, 0))
	w.e.UpsertNode(node("a", []string{"default=8/0"}, "default=10.20.0.0/24"))
	w.eval()
	// The CIDR holding a's is removed from the pool: a keeps it (its pods
	// drain out of it) and, as it no longer counts, gets room elsewhere.
	w.e.UpsertPool(pool("default", 0, []string{"10.30.0.0/24", "10.40.0.0/24"}, 24, nil, 0))
	w.e.UpsertNode(node("b", []string{"default=8/0"}))
	expect(t, "a keeps it and gets another", w.adds("a"), "10.30.0.0/24(default)|")
	expect(t, "b gets the next", w.adds("b"), "10.40.0.0/24(default)|")
	if st := w.statuses["default"]; st.RemovedInUse != "CIDRs removed from the pool drain (their nodes keep them for the pods in them, hand out nothing more from them and release each once its last pod is gone; no one else gets them meanwhile): 10.20.0.0/24 (node a)" {
		t.Fatalf("pool status: %q", st.RemovedInUse)
	}
	// Re-added, and b needs more: it must not get a's.
	w.apply("a")
	w.apply("b")
	w.e.UpsertPool(pool("default", 0, []string{"10.20.0.0/24", "10.30.0.0/24", "10.40.0.0/24"}, 24, nil, 0))
	w.e.UpsertNode(node("b", []string{"default=300/0"}, "default=10.40.0.0/24"))
	if got := w.adds("b"); !strings.Contains(got, "no free /24") {
		t.Fatalf("b after the re-add: %q", got)
	}
	// a released the drained CIDR: the condition resolves.
	w.e.UpsertNode(node("a", []string{"default=8/0"}, "default=10.30.0.0/24"))
	w.eval()
	if st := w.statuses["default"]; st.RemovedInUse != "" {
		t.Fatalf("after a released it: %q", st.RemovedInUse)
	}
}

// TestShortfallsReadBack: what the allocator cannot do reaches the node's
// agent as structured shortfalls through operator-status.error.
func TestShortfallsReadBack(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.e.UpsertPool(pool("tiny", 0, []string{"10.20.0.0/24"}, 24, nil, 0))
	w.e.UpsertPool(pool("late", 1, []string{"10.20.0.0/16"}, 24, nil, 0)) // overlaps tiny
	gone := pool("gone", 2, []string{"10.50.0.0/16"}, 24, []string{"fd00:50::/104"}, 120)
	gone.Deleting = true
	w.e.UpsertPool(gone)
	w.e.UpsertNode(node("a", []string{"tiny=8/0"}, "tiny=10.20.0.0/24"))
	w.e.UpsertNode(node("b", []string{"tiny=8/0", "late=1/0", "gone=0/3"}))
	_ = w.adds("b")
	got := tables.ParsePodCIDRShortfalls(w.decisions["b"].Error)
	want := []tables.PodCIDRShortfall{
		{Pool: "tiny", Family: tables.IPv4, Cause: tables.ShortfallExhausted, Detail: "no free /24 is left in its IPv4 CIDRs", Requested: 8},
		{Pool: "late", Family: tables.IPv4, Cause: tables.ShortfallConflict,
			Detail: "the pool conflicts with another one (Pool conflicts since CIDR '10.20.0.0/16' overlaps CIDR '10.20.0.0/24' from CiliumPodIPPool 'tiny')", Requested: 1},
		{Pool: "gone", Family: tables.IPv6, Cause: tables.ShortfallDeleting, Detail: "the pool is being deleted", Requested: 3},
	}
	if !slices.Equal(got, want) {
		t.Fatalf("shortfalls of %q:\n got  %+v\n want %+v", w.decisions["b"].Error, got, want)
	}
}

func TestDeletingPool(t *testing.T) {
	w := newWorld(t, "a", "b")
	p := pool("blue", 0, []string{"10.20.0.0/16"}, 24, nil, 0)
	w.e.UpsertPool(p)
	w.e.UpsertNode(node("a", []string{"blue=8/0"}, "blue=10.20.0.0/24"))
	w.eval()
	if !w.statuses["blue"].InUse {
		t.Fatal("pool held by a is not in use")
	}
	del := *p
	del.Deleting = true
	w.e.UpsertPool(&del)
	w.e.UpsertNode(node("b", []string{"blue=8/0"}))
	if got := w.adds("b"); !strings.Contains(got, "the pool is being deleted") {
		t.Fatalf("b from a deleting pool: %q", got)
	}
	if st := w.statuses["blue"]; st.Terminating != "waiting for nodes to release their CIDRs: a" {
		t.Fatalf("terminating: %q", st.Terminating)
	}
	w.e.UpsertNode(node("a", nil))
	w.eval()
	if st := w.statuses["blue"]; st.InUse || st.Terminating != "" {
		t.Fatalf("after a released: %+v", st)
	}
}

func TestOrphanCiliumNodeIsDeletedAfterGrace(t *testing.T) {
	w := newWorld(t) // no Node objects
	w.e.UpsertPool(pool("default", 0, []string{"10.20.0.0/16"}, 24, nil, 0))
	n := node("gone", nil, "default=10.20.0.0/24")
	n.CreationTimestamp = w.now.Add(-30 * time.Second)
	w.e.UpsertNode(n)
	r := w.eval()
	if d := w.decisions["gone"]; d == nil || d.Delete {
		t.Fatalf("deleted within the grace period: %+v", d)
	}
	// The grace runs from when the allocator first saw it without a Node.
	if want := w.now.Add(orphanGrace); !r.NextCheck.Equal(want) {
		t.Fatalf("NextCheck = %v, want %v", r.NextCheck, want)
	}
	w.now = w.now.Add(orphanGrace)
	w.e.SetK8sNode("other", true) // something else changes; the grace ended
	w.e.Recheck()
	w.eval()
	if d := w.decisions["gone"]; d == nil || !d.Delete {
		t.Fatalf("orphan not deleted after the grace period: %+v", d)
	}
	// Its Node reappears before the deletion went out: keep it.
	w.e.SetK8sNode("gone", true)
	w.eval()
	if d := w.decisions["gone"]; d.Delete {
		t.Fatal("deleting a CiliumNode whose Node is back")
	}
}

// TestDeletedNodeGraceRunsFromDeletion: a CiliumNode created long ago
// whose Node is deleted now keeps its CIDRs for the whole grace after the
// deletion (not after the CiliumNode's creation).
func TestDeletedNodeGraceRunsFromDeletion(t *testing.T) {
	w := newWorld(t, "old")
	w.e.UpsertPool(pool("default", 0, []string{"10.20.0.0/16"}, 24, nil, 0))
	n := node("old", nil, "default=10.20.0.0/24")
	n.CreationTimestamp = w.now.Add(-24 * time.Hour)
	w.e.UpsertNode(n)
	w.eval()
	w.now = w.now.Add(time.Minute)
	w.e.SetK8sNode("old", false)
	r := w.eval()
	if d := w.decisions["old"]; d == nil || d.Delete {
		t.Fatalf("deleted at once although the Node just went: %+v", d)
	}
	if want := w.now.Add(orphanGrace); !r.NextCheck.Equal(want) {
		t.Fatalf("NextCheck = %v, want %v (the deletion plus the grace)", r.NextCheck, want)
	}
	w.now = w.now.Add(orphanGrace - time.Second)
	w.e.Recheck()
	w.eval()
	if d := w.decisions["old"]; d.Delete {
		t.Fatal("deleted before the grace after the Node's deletion ended")
	}
	w.now = w.now.Add(time.Second)
	w.e.Recheck()
	w.eval()
	if d := w.decisions["old"]; !d.Delete {
		t.Fatalf("not deleted once the grace ended: %+v", d)
	}
}

func TestPoolCounts(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.e.UpsertPool(pool("default", 0, []string{"10.20.0.0/16"}, 24, []string{"fd00:20::/104"}, 120))
	a := node("a", nil, "default=10.20.0.0/24", "default=fd00:20::/120")
	a.Usage = []tables.PoolUsage{{Pool: "default", IPv4: 7, IPv6: 7}}
	b := node("b", nil, "default=10.20.1.0/24")
	b.Usage = []tables.PoolUsage{{Pool: "default", IPv4: 3}}
	w.e.UpsertNode(a)
	w.e.UpsertNode(b)
	w.eval()
	st := w.statuses["default"]
	if *st.IPv4 != (tables.PodPoolFamilyStatus{CIDRsAllocated: 2, CIDRsTotal: "256", AddressesInUse: 10, Nodes: 2}) ||
		*st.IPv6 != (tables.PodPoolFamilyStatus{CIDRsAllocated: 1, CIDRsTotal: "65536", AddressesInUse: 7, Nodes: 1}) {
		t.Fatalf("counts: v4 %+v v6 %+v", *st.IPv4, *st.IPv6)
	}
}

// TestNeverTwoOwners hands out CIDRs to many nodes under churn (demands up
// and down, releases, pool edits) and checks after every step that no two
// nodes hold overlapping CIDRs unless they listed them that way themselves.
func TestNeverTwoOwners(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(pool("default", 0, []string{"10.20.0.0/20"}, 24, nil, 0))
	w.e.UpsertPool(pool("blue", 1, []string{"10.30.0.0/22"}, 26, nil, 0))
	rows := map[string]*tables.CiliumNode{}
	for i := 0; i < 12; i++ {
		name := fmt.Sprintf("n%02d", i)
		w.e.SetK8sNode(name, true)
		rows[name] = node(name, nil)
		w.e.UpsertNode(rows[name])
	}
	for step := 0; step < 300; step++ {
		name := fmt.Sprintf("n%02d", (step*7)%12)
		row := *rows[name]
		row.Allocated = slices.Clone(row.Allocated)
		switch step % 4 {
		case 0: // more demand
			row.Requested = []tables.PoolDemand{{Pool: "default", IPv4: 100 + step%300}, {Pool: "blue", IPv4: step % 120}}
		case 1: // the writer lands the decision
			if d := w.decisions[name]; d != nil {
				for _, a := range d.Add {
					for _, c := range a.CIDRs {
						if !row.Holds(a.Pool, c) {
							row.Allocated = addTo(slices.Clone(row.Allocated), a.Pool, c)
						}
					}
				}
			}
		case 2: // the agent releases its last CIDR of each pool
			row.Requested = nil
			for i := range row.Allocated {
				if cs := row.Allocated[i].CIDRs; len(cs) > 0 {
					row.Allocated[i].CIDRs = slices.Clone(cs[:len(cs)-1])
				}
			}
		case 3:
			if step%40 == 3 {
				w.e.UpsertPool(pool("default", 0, []string{"10.20.0.0/20", "10.21.0.0/22"}[:1+step%2], 24, nil, 0))
			}
		}
		rows[name] = &row
		w.e.UpsertNode(&row)
		w.eval()
		checkNoTwoOwners(t, step, w)
	}
}

func checkNoTwoOwners(t *testing.T, step int, w *world) {
	t.Helper()
	type own struct {
		p    netip.Prefix
		node string
	}
	var all []own
	for name, n := range w.e.nodes {
		for _, h := range n.current {
			all = append(all, own{h.prefix, name})
		}
		if d := w.decisions[name]; d != nil {
			for _, a := range d.Add {
				for _, c := range a.CIDRs {
					all = append(all, own{c, name})
				}
			}
		}
	}
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			if all[i].node != all[j].node && tables.PrefixesOverlap(all[i].p, all[j].p) {
				t.Fatalf("step %d: %s (%s) and %s (%s) overlap", step, all[i].p, all[i].node, all[j].p, all[j].node)
			}
		}
	}
}

// TestDeletedNodeCIDRsQuarantined: the CIDRs of a deleted CiliumNode go to
// no other node for quarantineFor (its pods may still run), then they do;
// the node created again listing them keeps them.
func TestDeletedNodeCIDRsQuarantined(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.e.UpsertPool(pool("default", 0, []string{"10.20.0.0/23"}, 24, nil, 0))
	w.e.UpsertNode(node("a", []string{"default=8/0"}, "default=10.20.0.0/24"))
	w.eval()
	w.e.DeleteNode("a")
	r := w.eval()
	if want := w.now.Add(quarantineFor); !r.NextCheck.Equal(want) {
		t.Fatalf("NextCheck = %v, want %v", r.NextCheck, want)
	}
	w.e.UpsertNode(node("b", []string{"default=300/0"}))
	expect(t, "b while a's CIDR is quarantined", w.adds("b"), "10.20.1.0/24(default)|"+
		`unable to allocate IPv4 CIDRs from pool "default": no free /24 is left in its IPv4 CIDRs (300 addresses requested, 253 available)`)
	// a comes back listing its CIDR: it is a's again.
	w.e.UpsertNode(node("a", []string{"default=8/0"}, "default=10.20.0.0/24"))
	expect(t, "a back", w.adds("a"), "|")
	w.e.DeleteNode("a")
	w.eval()
	w.now = w.now.Add(quarantineFor)
	w.e.Recheck()
	expect(t, "b once the quarantine is over", w.adds("b"), "10.20.1.0/24(default) 10.20.0.0/24(default)|")
}
