package noderoutes

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/heraldlb/herald/tables"
)

func TestClaims(t *testing.T) {
	d := netip.MustParsePrefix("198.18.64.0/24")
	via := map[string]netip.Addr{"node2": netip.MustParseAddr("198.18.4.12"), "node3": netip.MustParseAddr("198.18.4.13")}
	route := func(node string) *tables.NodeRoute {
		return &tables.NodeRoute{Dst: d, Via: via[node], Node: node, Pool: "default"}
	}
	type step struct {
		node    string
		holds   bool // the node lists d after this step
		noVia   bool // the node has no InternalIP of the family
		wantVia string
		twice   []string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"another node holds it", []step{{node: "node2", holds: true, wantVia: "node2"}}},
		{"it moves to another node", []step{
			{node: "node2", holds: true, wantVia: "node2"},
			{node: "node2", holds: false},
			{node: "node3", holds: true, wantVia: "node3"},
		}},
		{"this node holds it: no route, even if another lists it too", []step{
			{node: "node1", holds: true},
			{node: "node2", holds: true, twice: []string{"node1", "node2"}},
			{node: "node2", holds: false},
		}},
		{"two others: the first by name, stable whatever the order", []step{
			{node: "node3", holds: true, wantVia: "node3"},
			{node: "node2", holds: true, wantVia: "node2", twice: []string{"node2", "node3"}},
			{node: "node3", holds: true, wantVia: "node2", twice: []string{"node2", "node3"}},
			{node: "node2", holds: false, wantVia: "node3"},
		}},
		{"the first has no address of the family: through the next", []step{
			{node: "node2", holds: true, noVia: true},
			{node: "node3", holds: true, wantVia: "node3", twice: []string{"node2", "node3"}},
		}},
		{"a node that went", []step{
			{node: "node2", holds: true, wantVia: "node2"},
			{node: "node2", holds: false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClaims("node1")
			for i, s := range tc.steps {
				var cidrs []netip.Prefix
				var routes []*tables.NodeRoute
				if s.holds {
					cidrs = []netip.Prefix{d}
					if s.node != "node1" && !s.noVia {
						routes = []*tables.NodeRoute{route(s.node)}
					}
				}
				affected := c.set(s.node, cidrs, routes)
				if !slices.Contains(affected, d) {
					t.Fatalf("step %d: %s not among the affected %v", i, d, affected)
				}
				got, twice := c.resolve(d)
				gotVia := ""
				if got != nil {
					gotVia = got.Node
				}
				if gotVia != s.wantVia || !slices.Equal(twice, s.twice) {
					t.Fatalf("step %d (%s holds=%v): route via %q, several %v; want via %q, several %v", i, s.node, s.holds, gotVia, twice, s.wantVia, s.twice)
				}
			}
		})
	}
}
