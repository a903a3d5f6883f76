package lbipam

import (
	"context"
	"fmt"
	"testing"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

// Services annotated for MetalLB get what MetalLB would give them, under
// both of MetalLB's spellings (metallb.io/ and metallb.universe.tf/).

const (
	eventDisagree = "AnnotationsDisagree"
	disagreeType  = tables.ConditionAnnotationsDisagree
)

// metalLBPools are two pools, as a migration from MetalLB leaves them: one
// CiliumLoadBalancerIPPool per IPAddressPool, with the same name. "default"
// is the older, so it is the one LB IPAM takes from when nothing is named.
const metalLBPools = `
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "default"
spec:
  blocks:
  - cidr: "198.18.10.0/24"
  - cidr: "fd00:10::/120"
---
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "production"
spec:
  blocks:
  - cidr: "198.18.20.0/24"
`

func TestMetalLBAnnotations(t *testing.T) {
	startAgent(t, "node-a")

	t.Run("loadBalancerIPs", func(t *testing.T) {
		s := newScenario(t)
		s.apply(metalLBPools)
		// MetalLB's dual-stack form: one address of each family.
		s.apply(serviceYAML("web", nil, map[string]string{"metallb.io/loadBalancerIPs": "198.18.10.7, fd00:10::7"},
			"ipFamilyPolicy: RequireDualStack"))
		s.waitSatisfied("web", "198.18.10.7", "fd00:10::7")
		s.apply(serviceYAML("dns", nil, map[string]string{"metallb.universe.tf/loadBalancerIPs": "198.18.20.53"}))
		s.waitSatisfied("dns", "198.18.20.53")
		// A bad value is quoted back, as for lbipam.cilium.io/ips.
		s.apply(serviceYAML("typo", nil, map[string]string{"metallb.io/loadBalancerIPs": "198.18.10.300"}))
		s.waitPending("typo", tables.ReasonInvalidRequest,
			`Invalid LB IPAM request: annotation metallb.io/loadBalancerIPs: invalid IP address "198.18.10.300" in "198.18.10.300"`)
	})

	t.Run("allow-shared-ip", func(t *testing.T) {
		s := newScenario(t)
		s.apply(metalLBPools)
		s.apply(serviceYAML("http", nil, map[string]string{"metallb.io/allow-shared-ip": "front"}, "ports:\n- port: 80"))
		s.waitSatisfied("http", "198.18.10.0")
		// The older spelling, same key, another port: the same address.
		s.apply(serviceYAML("https", nil, map[string]string{"metallb.universe.tf/allow-shared-ip": "front"}, "ports:\n- port: 443"))
		s.waitSatisfied("https", "198.18.10.0")
		// Same key, a port already taken there: another address, as in MetalLB.
		s.apply(serviceYAML("http2", nil, map[string]string{"metallb.io/allow-shared-ip": "front"}, "ports:\n- port: 80"))
		s.waitSatisfied("http2", "198.18.10.1")
		// Unlike MetalLB, the key alone does not share across namespaces:
		// that takes lbipam.cilium.io/sharing-cross-namespace on both sides.
		other := s.namespace("other")
		s.applyIn(other, serviceYAML("smtp", nil, map[string]string{"metallb.io/allow-shared-ip": "front"}, "ports:\n- port: 25"))
		waitServiceIn(t, other, "smtp", metav1.ConditionTrue, tables.ReasonSatisfied, "", "198.18.10.2")
	})

	t.Run("address-pool", func(t *testing.T) {
		s := newScenario(t)
		s.apply(metalLBPools)
		s.apply(serviceYAML("any", nil, nil))
		s.waitSatisfied("any", "198.18.10.0")
		s.apply(serviceYAML("prod", nil, map[string]string{"metallb.io/address-pool": "production"}))
		s.waitSatisfied("prod", "198.18.20.0")
		s.apply(serviceYAML("prod-old", nil, map[string]string{"metallb.universe.tf/address-pool": "production"}))
		s.waitSatisfied("prod-old", "198.18.20.1")

		// A pool that does not exist: pending, nothing from another pool.
		s.apply(serviceYAML("gold", nil, map[string]string{"metallb.io/address-pool": "gold"}))
		const missing = "IP Pool 'gold' named by annotation metallb.io/address-pool does not exist"
		s.waitPending("gold", tables.ReasonNoPool, missing)
		s.waitEvent("gold", eventPending, tables.ReasonNoPool+": "+missing)
		s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "gold"
spec:
  blocks:
  - cidr: "198.18.30.0/24"
  serviceSelector:
    matchLabels: {tier: gold}
`)
		// It exists but does not select the Service: its selector applies.
		s.waitPending("gold", tables.ReasonPoolSelectorMismatch,
			"IP Pool 'gold' named by annotation metallb.io/address-pool has a serviceSelector that does not match this service")
		s.apply(serviceYAML("gold", map[string]string{"tier": "gold"}, map[string]string{"metallb.io/address-pool": "gold"}))
		s.waitSatisfied("gold", "198.18.30.0")

		// Requested IPs outside the named pool are refused, as MetalLB does.
		s.apply(serviceYAML("mixed", nil, map[string]string{
			"metallb.io/address-pool": "production", "metallb.io/loadBalancerIPs": "198.18.10.99",
		}))
		s.waitPending("mixed", tables.ReasonNoPool,
			"The requested IP '198.18.10.99' is not in IP Pool 'production' named by annotation metallb.io/address-pool")
	})

	t.Run("Cilium and MetalLB disagree", func(t *testing.T) {
		s := newScenario(t)
		s.apply(metalLBPools)
		s.apply(serviceYAML("both", nil, map[string]string{
			"lbipam.cilium.io/ips":       "198.18.10.20",
			"metallb.io/loadBalancerIPs": "198.18.10.21",
		}))
		const msg = `annotation metallb.io/loadBalancerIPs "198.18.10.21" is ignored: it differs from lbipam.cilium.io/ips "198.18.10.20", which applies`
		s.waitSatisfied("both", "198.18.10.20")
		s.waitDisagreement("both", msg)
		s.waitEvent("both", eventDisagree, msg)

		// Sharing keys that differ: the Cilium key applies.
		s.apply(serviceYAML("keys", nil, map[string]string{
			"lbipam.cilium.io/sharing-key":        "a",
			"metallb.universe.tf/allow-shared-ip": "b",
		}))
		s.waitDisagreement("keys", `annotation metallb.universe.tf/allow-shared-ip "b" is ignored: it differs from lbipam.cilium.io/sharing-key "a", which applies`)

		// Both of MetalLB's spellings, saying otherwise: metallb.io/
		// applies, and the Service is told, as MetalLB does not tell it.
		s.apply(serviceYAML("spellings", nil, map[string]string{
			"metallb.io/address-pool":          "production",
			"metallb.universe.tf/address-pool": "default",
		}))
		s.waitSatisfied("spellings", "198.18.20.0")
		s.waitDisagreement("spellings", `annotation metallb.universe.tf/address-pool "default" is ignored: it differs from metallb.io/address-pool "production", which applies`)

		// Made to agree, the condition goes; the address stays.
		s.apply(serviceYAML("both", nil, map[string]string{
			"lbipam.cilium.io/ips":       "198.18.10.20",
			"metallb.io/loadBalancerIPs": "198.18.10.20",
		}))
		s.waitDisagreement("both", "")
		s.waitSatisfied("both", "198.18.10.20")
	})

	t.Run("agreeing annotations carry no condition", func(t *testing.T) {
		s := newScenario(t)
		s.apply(metalLBPools)
		s.apply(serviceYAML("same", nil, map[string]string{
			"lbipam.cilium.io/ips": "198.18.10.30", "metallb.io/loadBalancerIPs": "198.18.10.30",
			"lbipam.cilium.io/sharing-key": "k", "metallb.io/allow-shared-ip": "k",
		}))
		s.waitSatisfied("same", "198.18.10.30")
		if c := apimeta.FindStatusCondition(s.service("same").Status.Conditions, disagreeType); c != nil {
			t.Fatalf("agreeing annotations got %+v", *c)
		}
	})
}

// waitDisagreement waits until the Service's annotations-disagree condition
// is True with the message, or absent when message is "".
func (s *scenario) waitDisagreement(name, message string) {
	s.t.Helper()
	waitFor(s.t, timeout, func() (bool, string) {
		svc, err := kube.CoreV1().Services(s.ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c := apimeta.FindStatusCondition(svc.Status.Conditions, disagreeType)
		if message == "" {
			return c == nil, fmt.Sprintf("service %s/%s still has %+v", s.ns, name, c)
		}
		good := c != nil && c.Status == metav1.ConditionTrue && c.Reason == tables.ReasonMetalLBAnnotationIgnored && c.Message == message
		return good, fmt.Sprintf("service %s/%s: want %s True %s %q, have %+v",
			s.ns, name, disagreeType, tables.ReasonMetalLBAnnotationIgnored, message, c)
	})
}
