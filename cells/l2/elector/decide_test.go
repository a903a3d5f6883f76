package elector

import (
	"slices"
	"testing"

	"github.com/heraldlb/herald/tables"
)

// placedOn returns a group name that place() gives to want among nodes.
func placedOn(t *testing.T, want string, nodes ...string) string {
	for i := range 1000 {
		g := "cilium-l2announce-default-svc" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if place([]Placeable{{Group: g, Nodes: nodes}})[g] == want {
			return g
		}
	}
	t.Fatalf("no group placed on %s", want)
	return ""
}

func TestDecide(t *testing.T) {
	three := []string{"node1", "node2", "node3"}
	g := placedOn(t, "node1", three...)
	alive := func(terms ...string) map[string]member {
		m := map[string]member{}
		for i, n := range three {
			if terms[i] != "" {
				m[n] = member{live: true, term: terms[i]}
			} else {
				m[n] = member{live: false, term: "old"}
			}
		}
		return m
	}
	base := func() view {
		return view{self: "node1", term: "t1", fresh: true, mayMove: true, apiUp: true,
			members: alive("t1", "t2", "t3"),
			groups:  []*tables.L2Candidate{{Group: g, Nodes: three}},
			records: map[string]holding{}}
	}
	type want struct {
		announce, withdraw bool
		writes             []write
		took               map[string]string
	}
	for _, tc := range []struct {
		name string
		edit func(*view)
		want want
	}{
		{"new group: the owner records itself before answering", func(v *view) {},
			want{writes: []write{{group: g, holder: "node1", term: "t1"}}}},
		{"the Lease names this node in its term: answer", func(v *view) {
			v.records[g] = holding{"node1", "t1", "5"}
		}, want{announce: true}},
		{"the Lease names this node in an earlier term: void, taken again by a write", func(v *view) {
			v.records[g] = holding{"node1", "t0", "5"}
		}, want{writes: []write{{group: g, holder: "node1", term: "t1", fromVersion: "5"}}}},
		{"held by a live node: wait for its handover", func(v *view) {
			v.records[g] = holding{"node2", "t2", "5"}
		}, want{}},
		{"held by a dead node: take it over", func(v *view) {
			v.members = alive("t1", "", "t3")
			v.records[g] = holding{"node2", "t2", "5"}
		}, want{writes: []write{{group: g, holder: "node1", term: "t1", fromVersion: "5"}}}},
		{"held by a node in an earlier term: take it over", func(v *view) {
			v.records[g] = holding{"node2", "t0", "5"}
		}, want{writes: []write{{group: g, holder: "node1", term: "t1", fromVersion: "5"}}}},
		{"dead holder, API server unreachable: answer at once, announce the takeover", func(v *view) {
			v.apiUp = false
			v.members = alive("t1", "", "t3")
			v.records[g] = holding{"node2", "t2", "5"}
		}, want{announce: true, took: map[string]string{g: "node2/t2"}}},
		{"took it unrecorded, API server back: keep answering and record it", func(v *view) {
			v.records[g] = holding{"node2", "t2", "5"}
			v.members = alive("t1", "", "t3")
			v.took = map[string]string{g: "node2/t2"}
		}, want{announce: true, took: map[string]string{g: "node2/t2"},
			writes: []write{{group: g, holder: "node1", term: "t1", fromVersion: "5"}}}},
		{"took it unrecorded but someone recorded another holder since: not ours", func(v *view) {
			v.records[g] = holding{"node3", "t3", "6"}
			v.took = map[string]string{g: "node2/t2"}
		}, want{}},
		{"another member took it over unrecorded: wait for it", func(v *view) {
			v.records[g] = holding{"node1", "t0", "5"}
			v.members["node3"] = member{live: true, term: "t3", tookOver: []string{claimKey(g, "node1/t0")}}
		}, want{}},
		{"another member took over another group of the same dead holder: take this one", func(v *view) {
			v.apiUp = false
			v.members = alive("t1", "", "t3")
			v.members["node3"] = member{live: true, term: "t3", tookOver: []string{claimKey("other/group", "node2/t2")}}
			v.records[g] = holding{"node2", "t2", "5"}
		}, want{announce: true, took: map[string]string{g: "node2/t2"}}},
		{"an agent before per-group claims took over groups of the record: wait for it", func(v *view) {
			v.records[g] = holding{"node1", "t0", "5"}
			v.members["node3"] = member{live: true, term: "t3", tookOver: []string{"node1/t0"}}
		}, want{}},
		{"another member took over more than it can list: wait for it", func(v *view) {
			v.records[g] = holding{"node2", "t0", "5"}
			v.members["node3"] = member{live: true, term: "t3", tookOver: []string{tookMany}}
		}, want{}},
		{"no majority on either side: keep what is held", func(v *view) {
			v.mayMove = false
			v.records[g] = holding{"node1", "t1", "5"}
		}, want{announce: true}},
		{"no majority on either side: take nothing over", func(v *view) {
			v.mayMove = false
			v.members = alive("t1", "", "t3")
			v.records[g] = holding{"node2", "t2", "5"}
		}, want{}},
		{"held by an agent of the Lease election that renews it: leave it", func(v *view) {
			v.records[g] = holding{"node9", "t0", "5"}
			v.renewed = map[string]bool{g: true}
		}, want{}},
		{"held by a node outside the members that stopped renewing: take it over", func(v *view) {
			v.records[g] = holding{"node9", "t0", "5"}
		}, want{writes: []write{{group: g, holder: "node1", term: "t1", fromVersion: "5"}}}},
		{"a renewed Lease naming a live member in its term: it holds it", func(v *view) {
			v.records[g] = holding{"node1", "t1", "5"}
			v.renewed = map[string]bool{g: true}
		}, want{announce: true}},
		{"not fresh: nothing", func(v *view) {
			v.fresh = false
			v.records[g] = holding{"node1", "t1", "5"}
		}, want{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := base()
			tc.edit(&v)
			p := decide(v)
			d := p.decisions[g]
			if d.announce != tc.want.announce || d.withdraw != tc.want.withdraw {
				t.Errorf("announce=%v withdraw=%v (%s), want %v %v", d.announce, d.withdraw, d.why, tc.want.announce, tc.want.withdraw)
			}
			for i := range p.writes {
				p.writes[i].why = ""
			}
			if !slices.Equal(p.writes, tc.want.writes) {
				t.Errorf("writes %+v, want %+v (%s)", p.writes, tc.want.writes, d.why)
			}
			if len(p.took) != len(tc.want.took) {
				t.Errorf("took %v, want %v", p.took, tc.want.took)
			}
			for k, w := range tc.want.took {
				if p.took[k] != w {
					t.Errorf("took %v, want %v", p.took, tc.want.took)
				}
			}
		})
	}
}

// The owner changes (a node joins, the bound drops): the holder withdraws
// first, and only once its entries are out does it write the new holder.
func TestDecideHandover(t *testing.T) {
	two := []string{"node1", "node2"}
	// node1 holds three groups; with node2 alive the bound is two.
	groups := []*tables.L2Candidate{{Group: "g1", Nodes: two}, {Group: "g2", Nodes: two}, {Group: "g3", Nodes: two}}
	v := view{self: "node1", term: "t1", fresh: true, mayMove: true, apiUp: true,
		members: map[string]member{"node1": {live: true, term: "t1"}, "node2": {live: true, term: "t2"}},
		groups:  groups,
		records: map[string]holding{"g1": {"node1", "t1", "7"}, "g2": {"node1", "t1", "8"}, "g3": {"node1", "t1", "9"}}}
	p := decide(v)
	var g string
	for name, d := range p.decisions {
		if d.withdraw {
			if g != "" {
				t.Fatalf("two groups handed over, want one: %+v", p.decisions)
			}
			g = name
		}
	}
	if g == "" || len(p.writes) != 0 || p.decisions[g].announce {
		t.Fatalf("before the entries are out: %+v writes %v; want one group withdrawn, no write", p.decisions, p.writes)
	}
	v.withdrawn = map[string]bool{g: true}
	p = decide(v)
	want := []write{{group: g, holder: "node2", term: "t2", fromVersion: v.records[g].version}}
	for i := range p.writes {
		p.writes[i].why = ""
	}
	if !slices.Equal(p.writes, want) {
		t.Fatalf("writes %+v, want %+v", p.writes, want)
	}
	// Without the API server nothing moves between live nodes.
	v.apiUp, v.withdrawn = false, nil
	if d := decide(v).decisions[g]; !d.announce || d.withdraw {
		t.Fatalf("API server down: %+v, want keep answering", d)
	}
	// The new owner answers once the Lease names it.
	v2 := v
	v2.self, v2.term, v2.apiUp = "node2", "t2", true
	v2.records = map[string]holding{"g1": {"node1", "t1", "7"}, "g2": {"node1", "t1", "8"}, "g3": {"node1", "t1", "9"}}
	v2.records[g] = holding{"node2", "t2", "10"}
	if d := decide(v2).decisions[g]; !d.announce {
		t.Fatalf("new owner: %+v, want announce", d)
	}
}
