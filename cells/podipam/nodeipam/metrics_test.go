package nodeipam

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	ipamv1 "github.com/heraldlb/herald/api/ipam/v1"
	"github.com/heraldlb/herald/tables"
)

func TestRequestOutcomes(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "success"},
		{cniError(http.StatusServiceUnavailable, ipamv1.CodePoolExhausted, "pool %q", "tiny"), "pool_exhausted"},
		{cniError(http.StatusBadRequest, ipamv1.CodeUnknownPool, "no pool"), "unknown_pool"},
		{cniError(http.StatusServiceUnavailable, ipamv1.CodePoolMaskSize, "maskSize /32"), "pool_mask_size"},
		{cniError(http.StatusServiceUnavailable, ipamv1.CodeTryAgainLater, "later"), "try_again_later"},
		{http.ErrAbortHandler, "io_failure"}, // not an apiError: answered as an I/O failure
	} {
		m := newMetrics(&agent{node: "n1"})
		h := m.instrument("add", func(w http.ResponseWriter, _ *http.Request) { reply(w, struct{}{}, tc.err) })
		h(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, ipamv1.PathAdd, nil))
		if got := testutil.ToFloat64(m.requests.WithLabelValues("add", tc.want)); got != 1 {
			t.Errorf("error %v: herald_ipam_cni_requests_total{outcome=%q} = %v, want 1", tc.err, tc.want, got)
		}
		if n := testutil.CollectAndCount(m.duration); n != 1 {
			t.Errorf("error %v: %d duration series, want 1", tc.err, n)
		}
	}
}

func TestNodeAddressMetrics(t *testing.T) {
	s, _, _ := newTestState(tables.IPv4)
	s.setCIDRs([]tables.PoolCIDRs{alloc("default", "198.18.100.0/29")}) // 5 usable
	for _, id := range []string{"a", "b"} {
		if _, err := s.add(addReq(id), v4default); err != nil {
			t.Fatal(err)
		}
	}
	// A pool the node has no CIDR of: one ADD waits.
	if _, err := s.add(addReq("c"), map[tables.Family]string{tables.IPv4: "green"}); err == nil {
		t.Fatal("ADD into a pool without a CIDR succeeded")
	}
	m := newMetrics(&agent{node: "n1", state: s})
	want := `
# HELP herald_ipam_node_addresses Pod addresses of a pool on this node by state: capacity (usable addresses of the node's CIDRs that still hand out), in_use, pending (ADDs waiting for a CIDR).
# TYPE herald_ipam_node_addresses gauge
herald_ipam_node_addresses{family="ipv4",node="n1",pool="default",state="capacity"} 5
herald_ipam_node_addresses{family="ipv4",node="n1",pool="default",state="in_use"} 2
herald_ipam_node_addresses{family="ipv4",node="n1",pool="default",state="pending"} 0
herald_ipam_node_addresses{family="ipv4",node="n1",pool="green",state="capacity"} 0
herald_ipam_node_addresses{family="ipv4",node="n1",pool="green",state="in_use"} 0
herald_ipam_node_addresses{family="ipv4",node="n1",pool="green",state="pending"} 1
# HELP herald_ipam_node_cidrs Pod CIDRs of a pool this node holds.
# TYPE herald_ipam_node_cidrs gauge
herald_ipam_node_cidrs{family="ipv4",node="n1",pool="default"} 1
herald_ipam_node_cidrs{family="ipv4",node="n1",pool="green"} 0
`
	if err := testutil.CollectAndCompare(m, strings.NewReader(want), "herald_ipam_node_addresses", "herald_ipam_node_cidrs"); err != nil {
		t.Error(err)
	}
}
