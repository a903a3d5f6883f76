package candidates

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

func TestStrandedServices(t *testing.T) {
	nodes := []*tables.Node{
		{Name: "node3", Labels: map[string]string{"zone": "a"}},
		{Name: "node1", Labels: map[string]string{"zone": "b"}},
		{Name: "node2", Labels: map[string]string{"zone": "a"}},
	}
	all := policy("all", v2alpha1.CiliumL2AnnouncementPolicySpec{LoadBalancerIPs: true})
	zoneA := policy("zone-a", v2alpha1.CiliumL2AnnouncementPolicySpec{
		LoadBalancerIPs: true,
		NodeSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{"zone": "a"}},
	})
	externalOnly := policy("external", v2alpha1.CiliumL2AnnouncementPolicySpec{ExternalIPs: true})
	web := func() *tables.Service { return local(svc("default/web", nil, "", []string{"198.18.0.10"}, nil)) }
	cluster := func() *tables.Service { return svc("default/web", nil, "", []string{"198.18.0.10"}, nil) }
	for _, tt := range []struct {
		name     string
		svc      *tables.Service
		policies []*tables.L2Policy
		ready    []string // nodes with a ready endpoint
		served   bool     // a ready endpoint somewhere (perhaps on no node)
		keep     bool     // enable-no-service-endpoints-routable
		want     string   // "" = not stranded, else "reporter/selected cause"
	}{
		{name: "a ready endpoint on a selected node", svc: web(), policies: []*tables.L2Policy{all}, ready: []string{"node2"}, served: true},
		{name: "Local, no ready endpoint anywhere: the first selected node reports", svc: web(), policies: []*tables.L2Policy{all}, want: "node1/3 no-endpoint"},
		{name: "Local, no ready endpoint anywhere, kept: still no local one", svc: web(), policies: []*tables.L2Policy{all}, keep: true, want: "node1/3 no-local-endpoint"},
		{name: "ready only where no policy selects", svc: web(), policies: []*tables.L2Policy{zoneA}, ready: []string{"node1"}, served: true, want: "node2/2 no-local-endpoint"},
		{name: "Cluster with a ready endpoint on no node", svc: cluster(), policies: []*tables.L2Policy{all}, served: true},
		{name: "Cluster without a ready endpoint", svc: cluster(), policies: []*tables.L2Policy{all}, want: "node1/3 no-endpoint"},
		{name: "Cluster without a ready endpoint, kept", svc: cluster(), policies: []*tables.L2Policy{all}, keep: true},
		{name: "no policy: not ours to report", svc: web()},
		{name: "a policy that announces none of its IPs", svc: web(), policies: []*tables.L2Policy{externalOnly}},
		{name: "no IP yet", svc: local(svc("default/web", nil, "", nil, nil)), policies: []*tables.L2Policy{all}},
		{name: "another class", svc: local(svc("default/web", nil, "io.cilium/bgp-control-plane", []string{"198.18.0.10"}, nil)), policies: []*tables.L2Policy{all}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := strandedServices(inputs{services: []*tables.Service{tt.svc}, policies: tt.policies, nodes: nodes, keepUnserved: tt.keep,
				readyNodes: func(svc string) []string {
					if svc != tt.svc.Key() {
						t.Fatalf("asked for the endpoints of %s", svc)
					}
					return slices.Clone(tt.ready)
				},
				served: func(svc string) bool { return tt.served },
			})
			var s string
			if len(got) == 1 {
				s = fmt.Sprintf("%s/%d %s", got[0].reporter, got[0].selected, map[strandCause]string{noReadyEndpoint: "no-endpoint", noLocalEndpoint: "no-local-endpoint"}[got[0].cause])
			} else if len(got) > 1 {
				t.Fatalf("%d stranded entries for one Service", len(got))
			}
			if s != tt.want {
				t.Errorf("stranded: %q, want %q", s, tt.want)
			}
		})
	}
}

// BenchmarkStrandedServices: 1000 Local Services with a ready endpoint on
// one node each, 1000 nodes, two policies (all nodes, half of them): what
// every Node update costs the announcer on top of the selection.
func BenchmarkStrandedServices(b *testing.B) {
	var nodes []*tables.Node
	for i := range 1000 {
		nodes = append(nodes, &tables.Node{Name: fmt.Sprintf("node%04d", i), Labels: map[string]string{"half": fmt.Sprint(i % 2)}})
	}
	var services []*tables.Service
	for i := range 1000 {
		services = append(services, local(svc(fmt.Sprintf("default/s%04d", i), nil, "", []string{"198.18.0.10"}, nil)))
	}
	policies := []*tables.L2Policy{
		policy("all", v2alpha1.CiliumL2AnnouncementPolicySpec{LoadBalancerIPs: true}),
		policy("half", v2alpha1.CiliumL2AnnouncementPolicySpec{
			LoadBalancerIPs: true,
			NodeSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{"half": "0"}},
		}),
	}
	ready := func(svc string) []string { return []string{"node0" + svc[len(svc)-3:]} }
	b.ResetTimer()
	for range b.N {
		in := inputs{services: services, policies: policies, nodes: nodes, readyNodes: ready, served: func(string) bool { return true }}
		if got := strandedServices(in); len(got) != 0 {
			b.Fatalf("%d stranded", len(got))
		}
	}
}
