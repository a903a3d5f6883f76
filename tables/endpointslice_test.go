package tables

import (
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestEndpointSliceFromK8s(t *testing.T) {
	ep := func(node *string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{"198.18.1.2"}, NodeName: node, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	}
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-abc", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		Endpoints: []discoveryv1.Endpoint{
			ep(ptr.To("node2"), ptr.To(true)),
			ep(ptr.To("node1"), nil),           // unknown readiness: ready, as the API says
			ep(ptr.To("node3"), ptr.To(false)), // not ready
			ep(nil, ptr.To(true)),              // on no node
			ep(ptr.To("node2"), ptr.To(true)),  // node2 again
			ep(ptr.To(""), ptr.To(true)),       // empty node name
		},
	}
	row := EndpointSliceFromK8s(s)
	if row.ServiceKey() != "ns/web" || row.Key() != "ns/web-abc" {
		t.Fatalf("keys: %q %q", row.ServiceKey(), row.Key())
	}
	if want := []string{"node1", "node2"}; !slices.Equal(row.ReadyNodes, want) {
		t.Fatalf("ReadyNodes = %v, want %v", row.ReadyNodes, want)
	}
	// node2 twice, node1, the one on no node and the one on an empty name.
	if row.Ready != 5 {
		t.Fatalf("Ready = %d, want 5", row.Ready)
	}
	// A terminating endpoint that still serves is not ready.
	s.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"198.18.1.2"}, NodeName: ptr.To("node1"),
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)}}}
	if row := EndpointSliceFromK8s(s); row.Ready != 0 || row.ReadyNodes != nil {
		t.Fatalf("terminating, serving: Ready %d, ReadyNodes %v; want none", row.Ready, row.ReadyNodes)
	}
	// Readiness unknown while terminating: ready, as the API's nil rule
	// says (kube-proxy and Cilium read it so too).
	s.Endpoints[0].Conditions = discoveryv1.EndpointConditions{Terminating: ptr.To(true)}
	if row := EndpointSliceFromK8s(s); row.Ready != 1 || !slices.Equal(row.ReadyNodes, []string{"node1"}) {
		t.Fatalf("unknown readiness, terminating: Ready %d, ReadyNodes %v; want 1, [node1]", row.Ready, row.ReadyNodes)
	}
	// An FQDN slice serves nothing: kube-proxy forwards to no name.
	fqdn := &discoveryv1.EndpointSlice{ObjectMeta: s.ObjectMeta, AddressType: discoveryv1.AddressTypeFQDN,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"web.example"}, NodeName: ptr.To("node1"), Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}}
	if row := EndpointSliceFromK8s(fqdn); row.Ready != 0 || row.ReadyNodes != nil || row.ServiceKey() != "ns/web" {
		t.Fatalf("FQDN slice: Ready %d, ReadyNodes %v, Service %q; want none of web", row.Ready, row.ReadyNodes, row.ServiceKey())
	}
	s.Labels = nil
	if row := EndpointSliceFromK8s(s); row.ServiceKey() != "" {
		t.Fatalf("a slice of no Service: ServiceKey %q", row.ServiceKey())
	}
}
