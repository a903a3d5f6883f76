package allocator

import (
	"slices"
	"strings"
	"testing"

	"github.com/heraldlb/herald/tables"
)

func TestExplain(t *testing.T) {
	pools := []*tables.LBPool{
		mkPool("blue-pool", 0, []string{"20.0.10.0/24"}, selecting("color", "blue")),
		mkPool("off", 1, []string{"20.0.30.0/24"}, disabled),
		mkPool("tiny", 2, []string{"20.0.40.1"}),
	}
	services := []*tables.Service{
		mkSvc("a/holder", 0),
		mkSvc("example/service-green", 1, label("color", "green")),
	}
	e := Simulate(Families{IPv4: true}, Responsibility{DefaultIPAM: true}, pools, services)
	got := e.Explain("example/service-green")
	want := []string{
		"Handled by LB IPAM (type LoadBalancer, loadBalancerClass unset).",
		"Families: ipFamilyPolicy SingleStack (unset) asks for one IPv4 address.",
		"Decision: pending, reason out_of_ips: All enabled CiliumLoadBalancerIPPools that match this service ran out of allocatable IPs",
		"Pool blue-pool: skipped, its serviceSelector color=blue does not match the Service (labels color=green,io.kubernetes.service.name=service-green,io.kubernetes.service.namespace=example).",
		"Pool off: selects the Service but is disabled: it keeps what it gave, and gives nothing new.",
		"Pool tiny: selects the Service and is out of IPv4 addresses.",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := e.Explain("a/holder"); !slices.Contains(got, "Decision: satisfied with 20.0.40.1 from pool tiny.") {
		t.Fatalf("holder: %q", got)
	}
	// The condition names neither the pool nor the holder of a requested
	// IP (Cilium's words); explain does.
	e = Simulate(Families{IPv4: true}, Responsibility{DefaultIPAM: true}, pools, []*tables.Service{
		mkSvc("a/holder", 0),
		mkSvc("example/asks", 1, annotate(tables.AnnotationIPs, "20.0.40.1,20.0.30.7,20.0.10.7,99.0.0.1")),
	})
	got = e.Explain("example/asks")
	for _, line := range []string{
		"Decision: pending, reason already_allocated: The IP '20.0.40.1' is already allocated to another service",
		"Requested IP 20.0.40.1: in IP Pool 'tiny'; held by a/holder.",
		"Requested IP 20.0.30.7: in IP Pool 'off' (disabled).",
		"Requested IP 20.0.10.7: in IP Pool 'blue-pool' (its serviceSelector does not match).",
		"Requested IP 99.0.0.1: in no IP Pool.",
	} {
		if !slices.Contains(got, line) {
			t.Errorf("explain lacks %q:\n%s", line, strings.Join(got, "\n"))
		}
	}
	if got := e.Explain("nope/nope"); got[0] != "Service nope/nope is not known to the agent." {
		t.Fatalf("unknown: %q", got)
	}
}

func TestPlan(t *testing.T) {
	pools := []*tables.LBPool{mkPool("p", 0, []string{"20.0.10.0/30"})}
	services := []*tables.Service{
		mkSvc("a/one", 0, ingress("20.0.10.0")),
		mkSvc("a/two", 1, ingress("20.0.10.3")),
		mkSvc("a/three", 2, ingress("20.0.10.1")),
		mkSvc("a/pending", 3),
		mkSvc("a/pending2", 4),
	}
	// Replacing the /30 by a /31 and another /31 keeps .0 and .1; the
	// Services on .2 and .3 must move, oldest first, to the new block. The
	// Service still waiting stays waiting, so it is not listed.
	edit := mkPool("p", 0, []string{"20.0.10.0/31", "20.0.10.8/31"})
	got := Plan(Families{IPv4: true}, Responsibility{DefaultIPAM: true}, pools, services, []*tables.LBPool{edit}, nil)
	var lines []string
	for _, c := range got {
		lines = append(lines, c.Service+" "+c.Verdict+" "+strings.Join(c.Before, ",")+" -> "+strings.Join(c.After, ","))
	}
	want := []string{
		"a/one keep 20.0.10.0 (p) -> 20.0.10.0 (p)",
		"a/pending move 20.0.10.2 (p) -> 20.0.10.9 (p)",
		"a/three keep 20.0.10.1 (p) -> 20.0.10.1 (p)",
		"a/two move 20.0.10.3 (p) -> 20.0.10.8 (p)",
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("got:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got[3].Released != "20.0.10.3: the IP Pool or block it came from was removed" {
		t.Fatalf("released: %q", got[3].Released)
	}
}

func TestExplainMetalLBAnnotations(t *testing.T) {
	pools := []*tables.LBPool{
		mkPool("other", 0, []string{"198.18.0.0/24"}),
		mkPool("blue", 1, []string{"198.18.1.0/24"}),
	}
	services := []*tables.Service{mkSvc("n/s", 0,
		annotate(tables.AnnotationMetalLBPool, "blue"),
		annotate(tables.AnnotationSharingKey, "a"), annotate(tables.AnnotationMetalLBSharedIP, "b"))}
	got := Simulate(Families{IPv4: true}, Responsibility{DefaultIPAM: true}, pools, services).Explain("n/s")
	for _, w := range []string{
		"Pool: only IP Pool 'blue' may give it addresses (annotation metallb.io/address-pool).",
		`Annotations disagree: annotation metallb.io/allow-shared-ip "b" is ignored: it differs from lbipam.cilium.io/sharing-key "a", which applies.`,
		"Decision: satisfied with 198.18.1.0 from pool blue.",
		"Pool other: skipped, the Service asks for IP Pool 'blue' (annotation metallb.io/address-pool).",
	} {
		if !slices.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
}
