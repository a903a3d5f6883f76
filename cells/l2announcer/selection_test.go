package l2announcer

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
	s := &tables.Service{Namespace: ns, Name: name, Labels: labels, Type: corev1.ServiceTypeLoadBalancer, LoadBalancerClass: class}
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

// render lists "lease: ip@dev(origins)" lines, sorted.
func render(sel selection) []string {
	var out []string
	for lease, g := range sel {
		for _, e := range g.entries {
			out = append(out, fmt.Sprintf("%s: %s@%s(%s)", lease, e.IP, e.NetworkInterface, strings.Join(e.Origins, ",")))
		}
	}
	slices.Sort(out)
	return out
}

func TestSelectAnnouncements(t *testing.T) {
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
			got := render(selectAnnouncements(tt.services, tt.policies, tt.node, devs,
				func(svc string) bool { return slices.Contains(tt.local, svc) }))
			if !slices.Equal(got, tt.want) {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}
