package lbipam

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

// Event reasons on Services (cells/lbipam/servicestatus).
const (
	eventAssigned = "IPAllocated"
	eventReleased = "IPReleased"
	eventPending  = "IPAllocationPending"
)

// blueAndCyanPool is blue-pool of the spec's "Service Selectors" section.
const blueAndCyanPool = `
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  serviceSelector:
    matchExpressions:
    - {key: color, operator: In, values: [blue, cyan]}
`

// Spec, "Services": a Service no pool matches is pending with the no_pool
// condition; relabelled to match blue-pool it gets an IP and the condition
// turns satisfied.
//
// The spec's second listing shows two conditions of the same type; a
// Service holds one condition per type (status.conditions is a map keyed by
// type), so the one condition is updated in place.
func TestServices(t *testing.T) {
	startAgent(t, "node-a")
	s := newScenario(t)
	s.apply(blueAndCyanPool)

	s.apply(`
apiVersion: v1
kind: Service
metadata:
  name: service-red
  namespace: example
  labels:
    color: red
spec:
  type: LoadBalancer
  ports:
  - port: 1234
`)
	s.waitPending("service-red", "no_pool", "There are no enabled CiliumLoadBalancerIPPools that match this service")
	// $ kubectl -n example get svc
	// NAME          TYPE           CLUSTER-IP      EXTERNAL-IP   PORT(S)          AGE
	// service-red   LoadBalancer   10.96.192.212   <pending>     1234:30628/TCP   24s
	if row := rowOf(t, kubectl(t, "-n", s.ns, "get", "svc"), "service-red"); row[3] != "<pending>" {
		t.Errorf("EXTERNAL-IP of service-red: %q, want <pending>", row[3])
	}
	s.waitEvent("service-red", eventPending, "no_pool: There are no enabled CiliumLoadBalancerIPPools that match this service")

	// "After updating the service labels to match our blue-pool from before"
	s.apply(`
apiVersion: v1
kind: Service
metadata:
  name: service-red
  namespace: example
  labels:
    color: blue
spec:
  type: LoadBalancer
  ports:
  - port: 1234
`)
	svc := s.waitSatisfied("service-red", "20.0.10.0")
	if row := rowOf(t, kubectl(t, "-n", s.ns, "get", "svc"), "service-red"); row[3] != "20.0.10.0" {
		t.Errorf("EXTERNAL-IP of service-red: %q, want 20.0.10.0", row[3])
	}
	if m := svc.Status.LoadBalancer.Ingress[0].IPMode; m == nil || *m != corev1.LoadBalancerIPModeVIP {
		t.Errorf("ingress ipMode: %v, want VIP", m)
	}
	if c := lbConditions(svc)[0]; c.ObservedGeneration != svc.Generation {
		t.Errorf("condition observedGeneration %d, want the Service's generation %d", c.ObservedGeneration, svc.Generation)
	}
	s.waitEvent("service-red", eventAssigned, "Assigned IP 20.0.10.0")
}

// Spec: "LB IPAM is always enabled but dormant. The controller is awoken
// when the first IP Pool is added to the cluster."
func TestDormantUntilFirstPool(t *testing.T) {
	a := startAgent(t, "node-a")
	s := newScenario(t)
	waitLeader(t, a)

	s.apply(serviceYAML("service-red", map[string]string{"color": "red"}, nil))
	waitSeen(t, a, s.ns, "service-red")
	waitSettled(t, a, s.ns, 0, timeout)
	if svc := s.service("service-red"); len(svc.Status.LoadBalancer.Ingress) != 0 || len(lbConditions(svc)) != 0 {
		t.Errorf("without pools LB IPAM must not touch service-red: %s", describeLB(svc))
	}

	s.apply(blueAndCyanPool)
	s.waitPending("service-red", tables.ReasonNoPool, tables.MessageNoPool)
}

// Spec, "Requesting IPs".
func TestRequestingIPs(t *testing.T) {
	startAgent(t, "node-a")

	t.Run("annotation", func(t *testing.T) {
		s := newScenario(t)
		s.apply(blueAndCyanPool)
		s.apply(`
apiVersion: v1
kind: Service
metadata:
  name: service-blue
  namespace: example
  labels:
    color: blue
  annotations:
    "lbipam.cilium.io/ips": "20.0.10.100,20.0.10.200"
spec:
  type: LoadBalancer
  ports:
  - port: 1234
`)
		s.waitSatisfied("service-blue", "20.0.10.100", "20.0.10.200")
		// $ kubectl -n example get svc
		// service-blue   LoadBalancer   10.96.26.105   20.0.10.100,20.0.10.200   1234:30363/TCP   43s
		if row := rowOf(t, kubectl(t, "-n", s.ns, "get", "svc"), "service-blue"); row[3] != "20.0.10.100,20.0.10.200" {
			t.Errorf("EXTERNAL-IP of service-blue: %q, want 20.0.10.100,20.0.10.200", row[3])
		}
		// The order of the annotation is the order of the ingress list.
		s.apply(serviceYAML("service-cyan", map[string]string{"color": "cyan"}, map[string]string{"lbipam.cilium.io/ips": "20.0.10.50,20.0.10.5"}))
		s.waitSatisfied("service-cyan", "20.0.10.50", "20.0.10.5")
	})

	t.Run("legacy spec.loadBalancerIP", func(t *testing.T) {
		s := newScenario(t)
		s.apply(blueAndCyanPool)
		s.apply(`
apiVersion: v1
kind: Service
metadata:
  name: service-blue
  namespace: example
  labels:
    color: blue
spec:
  type: LoadBalancer
  loadBalancerIP: "20.0.10.9"
  ports:
  - port: 1234
`)
		s.waitSatisfied("service-blue", "20.0.10.9")
	})

	t.Run("selector still applies", func(t *testing.T) {
		s := newScenario(t)
		s.apply(blueAndCyanPool)
		s.apply(serviceYAML("service-red", map[string]string{"color": "red"}, map[string]string{"lbipam.cilium.io/ips": "20.0.10.5"}))
		s.waitPending("service-red", tables.ReasonPoolSelectorMismatch,
			"The pool with the CIDR containing '20.0.10.5', doesn't select this service")
	})

	t.Run("unparsable value", func(t *testing.T) {
		s := newScenario(t)
		s.apply(blueAndCyanPool)
		s.apply(`
apiVersion: v1
kind: Service
metadata:
  name: service-blue
  namespace: example
  labels:
    color: blue
  annotations:
    "lbipam.cilium.io/ips": "20.0.10.300"
spec:
  type: LoadBalancer
  ports:
  - port: 1234
`)
		const message = `Invalid LB IPAM request: annotation lbipam.cilium.io/ips: invalid IP address "20.0.10.300" in "20.0.10.300"`
		s.waitPending("service-blue", tables.ReasonInvalidRequest, message)
		s.waitEvent("service-blue", eventPending, tables.ReasonInvalidRequest+": "+message)

		// Fixed, the request is served.
		s.apply(serviceYAML("service-blue", map[string]string{"color": "blue"}, map[string]string{"lbipam.cilium.io/ips": "20.0.10.30"}))
		s.waitSatisfied("service-blue", "20.0.10.30")

		// Broken again, with a bad entry beside a good one: the message names
		// the bad entry and the Service keeps the address it has.
		s.apply(serviceYAML("service-blue", map[string]string{"color": "blue"}, map[string]string{"lbipam.cilium.io/ips": "20.0.10.30,foo"}))
		s.waitService("service-blue", metav1.ConditionFalse, tables.ReasonInvalidRequest,
			`Invalid LB IPAM request: annotation lbipam.cilium.io/ips: invalid IP address "foo" in "20.0.10.30,foo"`, "20.0.10.30")
	})

	// An empty value (a Helm template's empty default) is no request, as in
	// Cilium: the Service gets an address like any other.
	t.Run("empty value", func(t *testing.T) {
		s := newScenario(t)
		s.apply(blueAndCyanPool)
		s.apply(serviceYAML("service-blue", map[string]string{"color": "blue"}, map[string]string{
			"lbipam.cilium.io/ips": "", "lbipam.cilium.io/sharing-key": "", "lbipam.cilium.io/sharing-cross-namespace": "",
		}))
		s.waitSatisfied("service-blue", "20.0.10.0")
	})
}

// Spec, "Sharing Keys".
func TestSharingKeys(t *testing.T) {
	startAgent(t, "node-a")
	const pool = `
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "shared-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
`

	t.Run("same key, different ports", func(t *testing.T) {
		s := newScenario(t)
		s.apply(pool)
		s.apply(`
apiVersion: v1
kind: Service
metadata:
  name: service-blue
  namespace: example
  labels:
    color: blue
  annotations:
    "lbipam.cilium.io/sharing-key": "1234"
spec:
  type: LoadBalancer
  ports:
  - port: 1234
---
apiVersion: v1
kind: Service
metadata:
  name: service-red
  namespace: example
  labels:
    color: red
  annotations:
    "lbipam.cilium.io/sharing-key": "1234"
spec:
  type: LoadBalancer
  ports:
  - port: 2345
`)
		s.waitSatisfied("service-blue", "20.0.10.0")
		s.waitSatisfied("service-red", "20.0.10.0")
		// $ kubectl -n example get svc: both show EXTERNAL-IP 20.0.10.0.
		out := kubectl(t, "-n", s.ns, "get", "svc")
		for _, name := range []string{"service-blue", "service-red"} {
			if row := rowOf(t, out, name); row[3] != "20.0.10.0" {
				t.Errorf("EXTERNAL-IP of %s: %q, want 20.0.10.0", name, row[3])
			}
		}

		// "If the services have conflicting ports, they will be allocated
		// different IPs, which will be added to the set of IPs belonging
		// to the sharing key."
		s.apply(serviceYAML("service-green", nil, map[string]string{"lbipam.cilium.io/sharing-key": "1234"}))
		s.waitSatisfied("service-green", "20.0.10.1")
		// A fourth Service fits on either IP of the key: it joins the first.
		s.apply(serviceYAML("service-cyan", nil, map[string]string{"lbipam.cilium.io/sharing-key": "1234"}, "ports:\n- port: 3456"))
		s.waitSatisfied("service-cyan", "20.0.10.0")
		// Without a key nothing is shared.
		s.apply(serviceYAML("service-plain", nil, nil, "ports:\n- port: 4567"))
		s.waitSatisfied("service-plain", "20.0.10.2")
	})

	t.Run("cross-namespace with both annotations", func(t *testing.T) {
		s := newScenario(t)
		s.apply(pool)
		other := s.namespace("other")
		s.apply(serviceYAML("service-blue", nil, map[string]string{
			"lbipam.cilium.io/sharing-key":             "1234",
			"lbipam.cilium.io/sharing-cross-namespace": other,
		}))
		s.waitSatisfied("service-blue", "20.0.10.0")
		s.applyIn(other, serviceYAML("service-red", nil, map[string]string{
			"lbipam.cilium.io/sharing-key":             "1234",
			"lbipam.cilium.io/sharing-cross-namespace": "*",
		}, "ports:\n- port: 2345"))
		waitServiceIn(t, other, "service-red", metav1.ConditionTrue, tables.ReasonSatisfied, "", "20.0.10.0")
	})

	t.Run("cross-namespace with one annotation only", func(t *testing.T) {
		s := newScenario(t)
		s.apply(pool)
		other := s.namespace("other")
		s.apply(serviceYAML("service-blue", nil, map[string]string{
			"lbipam.cilium.io/sharing-key":             "1234",
			"lbipam.cilium.io/sharing-cross-namespace": "*",
		}))
		s.waitSatisfied("service-blue", "20.0.10.0")
		s.applyIn(other, serviceYAML("service-red", nil, map[string]string{
			"lbipam.cilium.io/sharing-key": "1234",
		}, "ports:\n- port: 2345"))
		waitServiceIn(t, other, "service-red", metav1.ConditionTrue, tables.ReasonSatisfied, "", "20.0.10.1")
	})

	// A requested IP that others hold: Cilium's reasons and messages, which
	// name neither the holder nor its namespace.
	t.Run("requested IP held by others", func(t *testing.T) {
		s := newScenario(t)
		s.apply(pool)
		s.apply(serviceYAML("service-blue", nil, map[string]string{"lbipam.cilium.io/sharing-key": "1234"}))
		s.waitSatisfied("service-blue", "20.0.10.0")
		s.apply(serviceYAML("service-plain", nil, map[string]string{"lbipam.cilium.io/ips": "20.0.10.0"}, "ports:\n- port: 2345"))
		s.waitPending("service-plain", tables.ReasonAlreadyAllocated, "The IP '20.0.10.0' is already allocated to another service")
		s.apply(serviceYAML("service-red", nil, map[string]string{
			"lbipam.cilium.io/ips": "20.0.10.0", "lbipam.cilium.io/sharing-key": "other",
		}, "ports:\n- port: 2345"))
		s.waitPending("service-red", tables.ReasonAlreadyAllocatedIncompat,
			"The IP '20.0.10.0' is already allocated to an incompatible service. Reason: different sharing key")
		other := s.namespace("other")
		s.applyIn(other, serviceYAML("service-red", nil, map[string]string{
			"lbipam.cilium.io/ips": "20.0.10.0", "lbipam.cilium.io/sharing-key": "1234",
		}, "ports:\n- port: 2345"))
		waitServiceIn(t, other, "service-red", metav1.ConditionFalse, tables.ReasonAlreadyAllocatedIncompat,
			"The IP '20.0.10.0' is already allocated to an incompatible service. Reason: different and not permitted namespace")
	})

	// externalTrafficPolicy Local: the same Pods, or every Service of the
	// key permits different ones; never without a selector.
	t.Run("Local with different selectors", func(t *testing.T) {
		s := newScenario(t)
		s.apply(pool)
		local := func(app string) string {
			spec := "externalTrafficPolicy: Local"
			if app != "" {
				spec += "\nselector:\n  app: " + app
			}
			return spec
		}
		permit := map[string]string{"lbipam.cilium.io/sharing-key": "k", "lbipam.cilium.io/sharing-permit-different-pods": "true"}
		s.apply(serviceYAML("web", nil, permit, local("web"), "ports:\n- port: 80"))
		s.waitSatisfied("web", "20.0.10.0")
		s.apply(serviceYAML("dns", nil, permit, local("dns"), "ports:\n- port: 53"))
		s.waitSatisfied("dns", "20.0.10.0")
		// Without the opt-in on this one: another address.
		s.apply(serviceYAML("mail", nil, map[string]string{"lbipam.cilium.io/sharing-key": "k"}, local("mail"), "ports:\n- port: 25"))
		s.waitSatisfied("mail", "20.0.10.1")
		// Without a selector: an address of its own, even with the opt-in.
		s.apply(serviceYAML("manual", nil, permit, local(""), "ports:\n- port: 8080"))
		s.waitSatisfied("manual", "20.0.10.2")
	})
}

// Spec, "IPv4 / IPv6 families + policy", with --enable-ipv6 and a
// dual-stack API server (service-cluster-ip-range has an IPv6 range).
func TestIPFamilies(t *testing.T) {
	startAgent(t, "node-a")
	tests := []struct {
		name string
		spec []string // extra lines of the Service's spec
		want []string
	}{
		{"no policy is SingleStack IPv4", nil, []string{"20.0.10.0"}},
		{"SingleStack IPv6", []string{"ipFamilyPolicy: SingleStack", "ipFamilies: [IPv6]"}, []string{"2004::"}},
		{"PreferDualStack", []string{"ipFamilyPolicy: PreferDualStack"}, []string{"20.0.10.0", "2004::"}},
		{"RequireDualStack", []string{"ipFamilyPolicy: RequireDualStack"}, []string{"20.0.10.0", "2004::"}},
		// The ingress list follows spec.ipFamilies.
		{"RequireDualStack IPv6 first", []string{"ipFamilyPolicy: RequireDualStack", "ipFamilies: [IPv6, IPv4]"}, []string{"2004::", "20.0.10.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScenario(t)
			s.apply(dualPool)
			s.apply(serviceYAML("service-blue", nil, nil, tt.spec...))
			s.waitSatisfied("service-blue", tt.want...)
		})
	}
}

// Spec, "LoadBalancerClass": Services of a class LB IPAM does not handle
// are ignored entirely, "not even setting a condition in the status";
// io.cilium/l2-announcer is handled while L2 announcements are enabled.
func TestLoadBalancerClass(t *testing.T) {
	a := startAgent(t, "node-a")
	s := newScenario(t)
	s.apply(bluePool)
	s.apply(serviceYAML("service-other", nil, nil, "loadBalancerClass: example.com/other"))
	s.apply(serviceYAML("service-l2", nil, nil, "loadBalancerClass: io.cilium/l2-announcer"))
	// service-blue, created last, is the witness: once it has its IP the
	// agent has seen the two before it.
	s.apply(serviceYAML("service-blue", nil, nil))
	s.waitSatisfied("service-blue", "20.0.10.0")
	waitSettled(t, a, s.ns, 1, timeout) // a decision for service-blue only

	notTouched := func(name string) {
		t.Helper()
		svc := s.service(name)
		if len(svc.Status.LoadBalancer.Ingress) != 0 || len(lbConditions(svc)) != 0 {
			t.Errorf("%s must be ignored by LB IPAM: %s", name, describeLB(svc))
		}
	}
	notTouched("service-other")
	notTouched("service-l2") // --enable-l2-announcements is off

	// With --enable-l2-announcements, io.cilium/l2-announcer is handled.
	stopAgent(t, a)
	a = startAgent(t, "node-a", "--enable-l2-announcements", "--l2-announcements-election=lease")
	s.waitSatisfied("service-l2", "20.0.10.1")
	waitSettled(t, a, s.ns, 2, timeout)
	s.waitSatisfied("service-blue", "20.0.10.0")
	notTouched("service-other")

	// The class of a Service cannot change while its type stays
	// LoadBalancer (the API server says "may not change once set"), so it
	// changes by way of type ClusterIP, which also makes the API server
	// drop status.loadBalancer. Herald must drop its condition.
	s.apply(`
apiVersion: v1
kind: Service
metadata:
  name: service-l2
  namespace: example
spec:
  type: ClusterIP
  ports:
  - port: 1234
`)
	s.apply(serviceYAML("service-l2", nil, nil, "loadBalancerClass: example.com/other"))
	s.waitUntouched("service-l2")
	// Its IP is free again.
	s.apply(serviceYAML("service-cyan", nil, nil))
	s.waitSatisfied("service-cyan", "20.0.10.1")

	// A class that stops being handled (L2 announcements turned off again)
	// hands the Service back: Herald removes its ingress and condition.
	s.apply(serviceYAML("service-l2-too", nil, nil, "loadBalancerClass: io.cilium/l2-announcer"))
	s.waitSatisfied("service-l2-too", "20.0.10.2")
	stopAgent(t, a)
	a = startAgent(t, "node-a")
	s.waitUntouched("service-l2-too")
	s.waitEvent("service-l2-too", eventReleased, "Released IP 20.0.10.2: the service is no longer handled by LB IPAM")
	s.waitSatisfied("service-blue", "20.0.10.0")
	s.waitSatisfied("service-cyan", "20.0.10.1")
}

// Lifecycle: IPs go back to the pool when their Service or their block
// goes away, and pool edits that keep an IP valid never move it.
func TestLifecycle(t *testing.T) {
	a := startAgent(t, "node-a")

	t.Run("deleting a Service releases its IP", func(t *testing.T) {
		s := newScenario(t)
		s.apply(bluePool)
		for i, name := range []string{"service-a", "service-b", "service-c"} {
			s.apply(serviceYAML(name, nil, nil))
			s.waitSatisfied(name, fmt.Sprintf("20.0.10.%d", i))
		}
		s.deleteService("service-a")
		s.waitPoolCounts("blue-pool", "256", "254", "2")
		// The lowest free IP goes first: service-a's.
		s.apply(serviceYAML("service-d", nil, nil))
		s.waitSatisfied("service-d", "20.0.10.0")
		s.apply(serviceYAML("service-e", nil, nil))
		s.waitSatisfied("service-e", "20.0.10.3")
		s.waitSatisfied("service-b", "20.0.10.1")
		s.waitSatisfied("service-c", "20.0.10.2")
	})

	t.Run("removing a block releases its IPs", func(t *testing.T) {
		s := newScenario(t)
		s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  - cidr: "20.0.20.0/24"
`)
		s.apply(serviceYAML("service-a", nil, nil))
		s.waitSatisfied("service-a", "20.0.10.0")
		s.apply(serviceYAML("service-b", nil, map[string]string{"lbipam.cilium.io/ips": "20.0.20.5"}))
		s.waitSatisfied("service-b", "20.0.20.5")

		s.apply(bluePool)
		s.waitPending("service-b", tables.ReasonNoPool, "No pool exists with a CIDR containing '20.0.20.5'")
		s.waitEvent("service-b", eventReleased, "Released IP 20.0.20.5: the IP Pool or block it came from was removed")
		s.waitPoolCounts("blue-pool", "256", "255", "1")
		s.waitSatisfied("service-a", "20.0.10.0")
	})

	t.Run("edits that keep IPs valid move nothing", func(t *testing.T) {
		s := newScenario(t)
		s.apply(bluePool)
		for i, name := range []string{"service-a", "service-b"} {
			s.apply(serviceYAML(name, nil, nil))
			s.waitSatisfied(name, fmt.Sprintf("20.0.10.%d", i))
		}
		before := map[string]string{}
		for _, name := range []string{"service-a", "service-b"} {
			before[name] = s.service(name).ResourceVersion
		}
		checkUnchanged := func() {
			t.Helper()
			// The new counts show the agent has seen the edit; Done rows
			// show it has written everything it decided.
			waitSettled(t, a, s.ns, 2, timeout)
			for i, name := range []string{"service-a", "service-b"} {
				svc := s.service(name)
				if got := describeLB(svc); got != fmt.Sprintf(`ingress ["20.0.10.%d"], %s conditions [{status: True, reason: "satisfied", message: ""}]`, i, conditionType) {
					t.Errorf("%s changed: %s", name, got)
				}
				if svc.ResourceVersion != before[name] {
					t.Errorf("%s was written (resourceVersion %s, was %s): %s", name, svc.ResourceVersion, before[name], describeLB(svc))
				}
			}
		}

		// Adding a block.
		s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  - cidr: "20.0.20.0/24"
`)
		s.waitPoolCounts("blue-pool", "512", "510", "2")
		checkUnchanged()

		// allowFirstLastIPs: No reserves 20.0.10.0 from now on, but never
		// takes it from the Service that has it.
		s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  - cidr: "20.0.20.0/24"
  allowFirstLastIPs: "No"
`)
		s.waitPoolCondition("blue-pool", tables.ConditionIPsTotal, metav1.ConditionUnknown, tables.ReasonNoReason, "508")
		checkUnchanged()
		s.apply(serviceYAML("service-c", nil, nil))
		s.waitSatisfied("service-c", "20.0.10.2")
	})
}
