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
	for _, tt := range []struct {
		name     string
		svc      *tables.Service
		policies []*tables.L2Policy
		ready    []string
		want     string // "" = not stranded, else "reporter/selected"
	}{
		{name: "a ready endpoint on a selected node", svc: web(), policies: []*tables.L2Policy{all}, ready: []string{"node2"}},
		{name: "no ready endpoint anywhere: the first selected node reports", svc: web(), policies: []*tables.L2Policy{all}, want: "node1/3"},
		{name: "ready only where no policy selects", svc: web(), policies: []*tables.L2Policy{zoneA}, ready: []string{"node1"}, want: "node2/2"},
		{name: "Cluster is never stranded", svc: svc("default/web", nil, "", []string{"198.18.0.10"}, nil), policies: []*tables.L2Policy{all}},
		{name: "no policy: not ours to report", svc: web()},
		{name: "a policy that announces none of its IPs", svc: web(), policies: []*tables.L2Policy{externalOnly}},
		{name: "no IP yet", svc: local(svc("default/web", nil, "", nil, nil)), policies: []*tables.L2Policy{all}},
		{name: "another class", svc: local(svc("default/web", nil, "io.cilium/bgp-control-plane", []string{"198.18.0.10"}, nil)), policies: []*tables.L2Policy{all}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := strandedServices([]*tables.Service{tt.svc}, tt.policies, nodes, func(svc string) []string {
				if svc != tt.svc.Key() {
					t.Fatalf("asked for the endpoints of %s", svc)
				}
				return slices.Clone(tt.ready)
			})
			var s string
			if len(got) == 1 {
				s = fmt.Sprintf("%s/%d", got[0].reporter, got[0].selected)
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
		if got := strandedServices(services, policies, nodes, ready); len(got) != 0 {
			b.Fatalf("%d stranded", len(got))
		}
	}
}
