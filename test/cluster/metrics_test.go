package cluster

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseRequestTotals(t *testing.T) {
	text := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="cilium.io",resource="ciliumnodes",scope="resource",subresource="",verb="PATCH",version="v2"} 7
apiserver_request_total{code="409",component="apiserver",dry_run="",group="cilium.io",resource="ciliumnodes",scope="resource",subresource="",verb="PATCH",version="v2"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="cilium.io",resource="ciliumnodes",scope="resource",subresource="status",verb="APPLY",version="v2"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 5
apiserver_request_total_other{resource="x"} 1
`
	got, err := parseRequestTotals(text)
	if err != nil {
		t.Fatal(err)
	}
	want := RequestCounts{
		{Verb: "PATCH", Resource: "ciliumnodes", Code: "200"}:                        7,
		{Verb: "PATCH", Resource: "ciliumnodes", Code: "409"}:                        2,
		{Verb: "APPLY", Resource: "ciliumnodes", Subresource: "status", Code: "200"}: 3,
	}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
	before := RequestCounts{{Verb: "PATCH", Resource: "ciliumnodes", Code: "200"}: 4, {Verb: "APPLY", Resource: "ciliumnodes", Subresource: "status", Code: "200"}: 3}
	d := got.Sub(before)
	if len(d) != 2 || d[RequestKey{Verb: "PATCH", Resource: "ciliumnodes", Code: "200"}] != 3 {
		t.Errorf("Sub: %v", d)
	}
	if s := (RequestKey{Verb: "PATCH", Resource: "ciliumnodes", Code: "409"}).String(); s != "PATCH ciliumnodes 409" {
		t.Errorf("String: %q", s)
	}
	if w := got.Filter(RequestKey.Write).Total(); w != 12 {
		t.Errorf("writes: %v, want 12", w)
	}
}

// TestRequestCounts: the API server's counter moves with our requests.
func TestRequestCounts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before, err := testCluster.RequestCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := testCluster.Client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	after, err := testCluster.RequestCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := after.Sub(before)[RequestKey{Verb: "LIST", Resource: "configmaps", Code: "200"}]; n != 3 {
		t.Errorf("LIST configmaps counted %v times, want 3 (%v)", n, after.Sub(before))
	}
}
