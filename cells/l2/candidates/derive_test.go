package candidates

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

func svc(key string, labels map[string]string, class string, ingress, external []string) *tables.Service {
	ns, name, _ := strings.Cut(key, "/")
	s := &tables.Service{Namespace: ns, Name: name, Labels: tables.LabelSetOf(labels), Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class}
	for _, ip := range ingress {
		s.IngressIPs = append(s.IngressIPs, netip.MustParseAddr(ip))
	}
	for _, ip := range external {
		s.ExternalIPs = append(s.ExternalIPs, netip.MustParseAddr(ip))
	}
	return s
}

// local makes s a Service with externalTrafficPolicy: Local.
func local(s *tables.Service) *tables.Service {
	s.ExternalTrafficPolicy = string(corev1.ServiceExternalTrafficPolicyLocal)
	return s
}

func policy(name string, spec v2alpha1.CiliumL2AnnouncementPolicySpec) *tables.L2Policy {
	p := &v2alpha1.CiliumL2AnnouncementPolicy{Spec: spec}
	p.Name = name
	return tables.L2PolicyFromK8s(p)
}

func device(index int, name string, selected bool) *tables.Device {
	mac, _ := net.ParseMAC(fmt.Sprintf("02:00:00:00:00:%02x", index))
	return &tables.Device{Index: index, Name: name, HWAddr: tables.HardwareAddr(mac), Selected: selected}
}

// render lists this node's entries as "group: ip@dev(origins)" lines,
// sorted.
func render(rows []*tables.L2Candidate) []string {
	var out []string
	for _, c := range rows {
		for _, e := range c.Local {
			out = append(out, fmt.Sprintf("%s: %s@%s(%s)", c.Group, e.IP, e.NetworkInterface, strings.Join(e.Origins, ",")))
		}
	}
	slices.Sort(out)
	return out
}

// TestLocalEntries: what this node would program for each group.
func TestLocalEntries(t *testing.T) {
	lb := v2alpha1.CiliumL2AnnouncementPolicySpec{LoadBalancerIPs: true}
	devs := []*tables.Device{device(2, "eth0", true), device(3, "eth1", true), device(4, "lxc1", false)}
	blue := map[string]string{"color": "blue"}
	tests := []struct {
		name     string
		services []*tables.Service
		policies []*tables.L2Policy
		node     map[string]string
		// local are the Services with a ready endpoint on this node.
		local []string
		want  []string
	}{
		{
			name:     "no policy, nothing announced",
			services: []*tables.Service{svc("default/a", nil, "", []string{"198.18.0.200"}, nil)},
		},
		{
			name:     "LB IPs on every selected device",
			services: []*tables.Service{svc("default/a", nil, "", []string{"198.18.0.200"}, nil)},
			policies: []*tables.L2Policy{policy("p", lb)},
			want: []string{
				"cilium-l2announce-default-a: 198.18.0.200@eth0(default/a)",
				"cilium-l2announce-default-a: 198.18.0.200@eth1(default/a)",
			},
		},
		{
			name:     "policy without IP types announces nothing",
			services: []*tables.Service{svc("default/a", nil, "", []string{"198.18.0.200"}, []string{"198.18.0.201"})},
			policies: []*tables.L2Policy{policy("p", v2alpha1.CiliumL2AnnouncementPolicySpec{})},
		},
		{
			name:     "external IPs only, interface regex",
			services: []*tables.Service{svc("default/a", nil, "", []string{"198.18.0.200"}, []string{"198.18.0.201"})},
			policies: []*tables.L2Policy{policy("p", v2alpha1.CiliumL2AnnouncementPolicySpec{ExternalIPs: true, Interfaces: []string{"^eth1$"}})},
			want:     []string{"cilium-l2announce-default-a: 198.18.0.201@eth1(default/a)"},
		},
		{
			name: "classes: unset and l2-announcer only",
			services: []*tables.Service{
				svc("default/a", nil, ClassL2Announcer, []string{"198.18.0.200"}, nil),
				svc("default/b", nil, "io.cilium/bgp-control-plane", []string{"198.18.0.201"}, nil),
			},
			policies: []*tables.L2Policy{policy("p", v2alpha1.CiliumL2AnnouncementPolicySpec{LoadBalancerIPs: true, Interfaces: []string{"eth0"}})},
			want:     []string{"cilium-l2announce-default-a: 198.18.0.200@eth0(default/a)"},
		},
		{
			name: "service and node selectors",
			services: []*tables.Service{
				svc("default/blue", blue, "", []string{"198.18.0.200"}, nil),
				svc("default/red", nil, "", []string{"198.18.0.201"}, nil),
			},
			policies: []*tables.L2Policy{
				policy("blue", v2alpha1.CiliumL2AnnouncementPolicySpec{LoadBalancerIPs: true, Interfaces: []string{"eth0"},
					ServiceSelector: &metav1.LabelSelector{MatchLabels: blue}}),
				policy("workers-only", v2alpha1.CiliumL2AnnouncementPolicySpec{LoadBalancerIPs: true,
					NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}}}),
			},
			node: map[string]string{"role": "control-plane"},
			want: []string{"cilium-l2announce-default-blue: 198.18.0.200@eth0(default/blue)"},
		},
		{
			name:     "a broken policy selects nothing",
			services: []*tables.Service{svc("default/a", nil, "", []string{"198.18.0.200"}, nil)},
			policies: []*tables.L2Policy{policy("p", v2alpha1.CiliumL2AnnouncementPolicySpec{LoadBalancerIPs: true, Interfaces: []string{"eth[0-"}})},
		},
		{
			name: "services sharing an IP form one group named after the first",
			services: []*tables.Service{
				svc("web/https", nil, "", []string{"198.18.0.200"}, nil),
				svc("web/http", nil, "", []string{"198.18.0.200", "198.18.0.202"}, nil),
				svc("web/other", nil, "", []string{"198.18.0.203"}, nil),
			},
			policies: []*tables.L2Policy{policy("p", v2alpha1.CiliumL2AnnouncementPolicySpec{LoadBalancerIPs: true, Interfaces: []string{"eth0"}})},
			want: []string{
				"cilium-l2announce-web-http: 198.18.0.200@eth0(web/http,web/https)",
				"cilium-l2announce-web-http: 198.18.0.202@eth0(web/http)",
				"cilium-l2announce-web-other: 198.18.0.203@eth0(web/other)",
			},
		},
		{
			name: "externalTrafficPolicy Local: only with a ready endpoint on this node; Cluster regardless",
			services: []*tables.Service{
				local(svc("default/local-here", nil, "", []string{"198.18.0.10"}, nil)),
				local(svc("default/local-elsewhere", nil, "", []string{"198.18.0.11"}, nil)),
				svc("default/cluster", nil, "", []string{"198.18.0.12"}, nil),
			},
			policies: []*tables.L2Policy{policy("p", v2alpha1.CiliumL2AnnouncementPolicySpec{LoadBalancerIPs: true, Interfaces: []string{"^eth0$"}})},
			local:    []string{"default/local-here"},
			want: []string{
				"cilium-l2announce-default-cluster: 198.18.0.12@eth0(default/cluster)",
				"cilium-l2announce-default-local-here: 198.18.0.10@eth0(default/local-here)",
			},
		},
		{
			name:     "IPv6 is announced (answered by Neighbor Advertisements), dual-stack Services in one group",
			services: []*tables.Service{svc("default/a", nil, "", []string{"fd00::200"}, nil), svc("default/b", nil, "", []string{"198.18.0.7", "fd00::7"}, nil)},
			policies: []*tables.L2Policy{policy("p", lb)},
			want: []string{
				"cilium-l2announce-default-a: fd00::200@eth0(default/a)",
				"cilium-l2announce-default-a: fd00::200@eth1(default/a)",
				"cilium-l2announce-default-b: 198.18.0.7@eth0(default/b)",
				"cilium-l2announce-default-b: 198.18.0.7@eth1(default/b)",
				"cilium-l2announce-default-b: fd00::7@eth0(default/b)",
				"cilium-l2announce-default-b: fd00::7@eth1(default/b)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			self := &tables.Node{Name: "self", Labels: tt.node}
			got := render(derive(inputs{self: "self", services: tt.services, policies: tt.policies, nodes: []*tables.Node{self}, devices: devs,
				readyNodes: func(svc string) []string {
					if slices.Contains(tt.local, svc) {
						return []string{"self"}
					}
					return nil
				},
				served: func(string) bool { return true }}))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

// TestCandidateNodes: which nodes may announce each group, as every agent
// derives it.
func TestCandidateNodes(t *testing.T) {
	lb := func(edit func(*v2alpha1.CiliumL2AnnouncementPolicySpec)) v2alpha1.CiliumL2AnnouncementPolicySpec {
		s := v2alpha1.CiliumL2AnnouncementPolicySpec{LoadBalancerIPs: true}
		if edit != nil {
			edit(&s)
		}
		return s
	}
	nodes := []*tables.Node{
		{Name: "cp", Labels: map[string]string{"role": "control-plane"}},
		{Name: "w1", Labels: map[string]string{"role": "worker"}},
		{Name: "w2", Labels: map[string]string{"role": "worker"}},
		{Name: "w3", Labels: map[string]string{"role": "worker"}},
	}
	workers := func(s *v2alpha1.CiliumL2AnnouncementPolicySpec) {
		s.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"role": "worker"}}
	}
	for _, tc := range []struct {
		name        string
		services    []*tables.Service
		policies    []*tables.L2Policy
		peerDevices map[string][]string
		ready       map[string][]string
		unserved    []string // Services with no ready endpoint anywhere
		keep        bool     // enable-no-service-endpoints-routable
		want        []string // "group: nodes"
	}{
		{
			name:     "node selector",
			services: []*tables.Service{svc("default/a", nil, "", []string{"198.18.0.200"}, nil)},
			policies: []*tables.L2Policy{policy("p", lb(workers))},
			want:     []string{"cilium-l2announce-default-a: w1,w2,w3"},
		},
		{
			name:        "a peer without a matching interface is left out; an unknown one is not",
			services:    []*tables.Service{svc("default/a", nil, "", []string{"198.18.0.200"}, nil)},
			policies:    []*tables.L2Policy{policy("p", lb(func(s *v2alpha1.CiliumL2AnnouncementPolicySpec) { workers(s); s.Interfaces = []string{"^eth0$"} }))},
			peerDevices: map[string][]string{"w1": {"eth0"}, "w2": {"bond0"}},
			want:        []string{"cilium-l2announce-default-a: w1,w3"},
		},
		{
			name:     "externalTrafficPolicy Local: nodes with a ready endpoint",
			services: []*tables.Service{local(svc("default/a", nil, "", []string{"198.18.0.200"}, nil))},
			policies: []*tables.L2Policy{policy("p", lb(nil))},
			ready:    map[string][]string{"default/a": {"w2", "elsewhere"}},
			want:     []string{"cilium-l2announce-default-a: w2"},
		},
		{
			name:     "externalTrafficPolicy Local without ready endpoints: a group nobody may announce",
			services: []*tables.Service{local(svc("default/a", nil, "", []string{"198.18.0.200"}, nil))},
			policies: []*tables.L2Policy{policy("p", lb(nil))},
			want:     []string{"cilium-l2announce-default-a: -"},
		},
		{
			name:     "no ready endpoint anywhere (externalTrafficPolicy Cluster): a group nobody may announce",
			services: []*tables.Service{svc("default/a", nil, "", []string{"198.18.0.200"}, nil)},
			policies: []*tables.L2Policy{policy("p", lb(workers))},
			unserved: []string{"default/a"},
			want:     []string{"cilium-l2announce-default-a: -"},
		},
		{
			name:     "no ready endpoint anywhere, enable-no-service-endpoints-routable: announced as before",
			services: []*tables.Service{svc("default/a", nil, "", []string{"198.18.0.200"}, nil)},
			policies: []*tables.L2Policy{policy("p", lb(workers))},
			unserved: []string{"default/a"},
			keep:     true,
			want:     []string{"cilium-l2announce-default-a: w1,w2,w3"},
		},
		{
			name: "a shared IP, one Service without a ready endpoint: the other's nodes",
			services: []*tables.Service{
				svc("default/a", nil, "", []string{"198.18.0.200"}, nil),
				svc("default/b", map[string]string{"tier": "cp"}, "", []string{"198.18.0.200"}, nil),
			},
			policies: []*tables.L2Policy{
				policy("cp", lb(func(s *v2alpha1.CiliumL2AnnouncementPolicySpec) {
					s.ServiceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "cp"}}
					s.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"role": "control-plane"}}
				})),
				policy("w", lb(func(s *v2alpha1.CiliumL2AnnouncementPolicySpec) {
					workers(s)
					s.ServiceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist}}}
				})),
			},
			unserved: []string{"default/a"},
			want:     []string{"cilium-l2announce-default-a: cp"},
		},
		{
			name: "a shared IP: the union of the Services' nodes",
			services: []*tables.Service{
				svc("default/a", map[string]string{"tier": "cp"}, "", []string{"198.18.0.200"}, nil),
				svc("default/b", nil, "", []string{"198.18.0.200"}, nil),
			},
			policies: []*tables.L2Policy{
				policy("cp", lb(func(s *v2alpha1.CiliumL2AnnouncementPolicySpec) {
					s.ServiceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "cp"}}
					s.NodeSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"role": "control-plane"}}
				})),
				policy("w", lb(func(s *v2alpha1.CiliumL2AnnouncementPolicySpec) {
					workers(s)
					s.ServiceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist}}}
				})),
			},
			want: []string{"cilium-l2announce-default-a: cp,w1,w2,w3"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := derive(inputs{self: "nobody", services: tc.services, policies: tc.policies, nodes: nodes, peerDevices: tc.peerDevices,
				readyNodes: func(s string) []string { return tc.ready[s] },
				served:     func(s string) bool { return !slices.Contains(tc.unserved, s) }, keepUnserved: tc.keep})
			var got []string
			for _, c := range rows {
				n := strings.Join(c.Nodes, ",")
				if n == "" {
					n = "-"
				}
				got = append(got, c.Group+": "+n)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
