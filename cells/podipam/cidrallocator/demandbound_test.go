package cidrallocator

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/heraldlb/herald/tables"
)

// A needed count edited by hand far beyond what a node can use must not
// make the allocator hand one node the pool (or loop through an IPv6 pool
// of 2^80 CIDRs): it is refused whole, named on the node, and the other
// nodes are served as before. Once the demand is sane again the node gets
// what it asks for.
func TestAbsurdDemandIsRefused(t *testing.T) {
	w := newWorld(t, "a", "b")
	w.e.UpsertPool(pool("default", 0, []string{"10.20.0.0/22"}, 24, nil, 0))
	w.e.UpsertNode(node("a", []string{"default=1000000/0"}, "default=10.20.0.0/24"))
	w.e.UpsertNode(node("b", []string{"default=8/0"}))
	expect(t, "a", w.adds("a"), `|unable to allocate IPv4 CIDRs from pool "default": the demand takes 3953 /24 CIDRs, more than the 1024 a node may hold of one pool and family (1000000 addresses requested, 253 available)`)
	expect(t, "b", w.adds("b"), "10.20.1.0/24(default)|")
	if st := w.statuses["default"]; st == nil || st.Exhausted != "" {
		t.Fatalf("the pool is not exhausted: %+v", st)
	}
	// What a refused node holds stays its own.
	if got := w.e.nodes["a"].holdingsOf("default", tables.IPv4); len(got) != 1 {
		t.Fatalf("a holds %v, want its one CIDR", got)
	}
	// Its agent writes its own demand again.
	w.e.UpsertNode(node("a", []string{"default=300/0"}, "default=10.20.0.0/24"))
	expect(t, "a corrected", w.adds("a"), "10.20.2.0/24(default)|")
}

// The largest demand the API accepts, on IPv6 pools so large that no
// exhaustion would ever stop the loop: refused at once.
func TestHugeIPv6DemandEnds(t *testing.T) {
	w := newWorld(t, "a")
	w.e.UpsertPool(pool("big", 0, nil, 0, []string{"fd00:20::/48"}, 120))
	w.e.UpsertPool(pool("wide", 1, nil, 0, []string{"fd00:30::/48"}, 64))
	w.e.UpsertNode(node("a", []string{"big=0/" + itoa(math.MaxInt64), "wide=0/" + itoa(math.MaxInt64)}))
	got := w.adds("a")
	for _, want := range []string{`pool "big": the demand takes 36312488334073921 /120 CIDRs, more than the 1024`, `pool "wide": the demand takes 8388608 /64 CIDRs, more than the 1024`} {
		if !strings.Contains(got, want) {
			t.Errorf("decision %q lacks %q", got, want)
		}
	}
	if add, _, _ := strings.Cut(got, "|"); add != "" {
		t.Errorf("added %s", add)
	}
}

// One CIDR per address (IPv4 /30): up to 1024 CIDRs are served.
func TestDemandAtTheBound(t *testing.T) {
	w := newWorld(t, "a")
	w.e.UpsertPool(pool("p30", 0, []string{"10.20.0.0/16"}, 30, nil, 0))
	w.e.UpsertNode(node("a", []string{"p30=1024/0"}))
	add, errs, _ := strings.Cut(w.adds("a"), "|")
	if errs != "" || strings.Count(add, "(p30)") != 1024 {
		t.Fatalf("errors %q, %d CIDRs added", errs, strings.Count(add, "(p30)"))
	}
	w.e.UpsertNode(node("a", []string{"p30=1025/0"}))
	if got := w.adds("a"); !strings.Contains(got, "the demand takes 1025 /30 CIDRs, more than the 1024") {
		t.Fatalf("1025 /30s: %q", got)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
