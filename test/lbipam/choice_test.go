package lbipam

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

// Pool choice (Documentation/lb-ipam.md, "Choosing among pools"): a
// priority orders the pools that select a Service, a reserved pool serves
// only the Services that name it or request its addresses, and a bad
// annotation gets a condition on the pool.
func TestPoolChoice(t *testing.T) {
	startAgent(t, "node-a")
	s := newScenario(t)
	s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "old-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
---
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "preferred-pool"
  annotations:
    lbipam.herald.io/priority: "1"
spec:
  blocks:
  - cidr: "20.0.20.0/24"
---
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "gold-pool"
  annotations:
    lbipam.herald.io/auto-assign: "false"
    lbipam.herald.io/priority: "1"
spec:
  blocks:
  - cidr: "20.0.30.0/24"
`)
	// The preferred pool before the older one; the reserved one never
	// for a Service that does not ask for it.
	s.apply(serviceYAML("plain", nil, nil))
	s.waitSatisfied("plain", "20.0.20.0")
	// Named (MetalLB's annotation) or requested: the reserved pool serves.
	s.apply(serviceYAML("named", nil, map[string]string{tables.AnnotationMetalLBPool: "gold-pool"}))
	s.waitSatisfied("named", "20.0.30.0")
	s.apply(serviceYAML("requested", nil, map[string]string{tables.AnnotationIPs: "20.0.30.9"}))
	s.waitSatisfied("requested", "20.0.30.9")

	// The preferred pool loses its priority: new Services go to the
	// oldest; what was given stays.
	s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "preferred-pool"
spec:
  blocks:
  - cidr: "20.0.20.0/24"
`)
	s.apply(serviceYAML("later", nil, nil))
	s.waitSatisfied("later", "20.0.10.0")
	s.waitSatisfied("plain", "20.0.20.0")

	// Only reserved pools select a Service (gold-pool selects every
	// Service): it waits, and says why.
	s.apply(redPool("false") + `---
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "old-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  serviceSelector:
    matchLabels:
      color: blue
---
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "preferred-pool"
spec:
  blocks:
  - cidr: "20.0.20.0/24"
  serviceSelector:
    matchLabels:
      color: blue
`)
	s.apply(serviceYAML("red", map[string]string{"color": "red"}, nil))
	s.waitPending("red", tables.ReasonNoPool,
		onlyReserved)

	// A typo: the pool says so, and stays reserved meanwhile.
	s.apply(redPool("flase"))
	const typo = `annotation lbipam.herald.io/auto-assign: "flase" is not true or false; the pool is reserved until it is fixed`
	s.waitPoolCondition("red-pool", tables.ConditionPoolBadAnnotations, metav1.ConditionTrue, tables.ReasonError, typo)
	waitPoolEvent(t, "red-pool", "InvalidAnnotations", typo)
	s.waitPending("red", tables.ReasonNoPool,
		onlyReserved)
	// Fixed: the condition resolves, and the Service gets its address.
	s.apply(redPool("true"))
	s.waitSatisfied("red", "20.0.40.0")
	s.waitPoolCondition("red-pool", tables.ConditionPoolBadAnnotations, metav1.ConditionFalse, tables.ReasonResolved, "")
}

// redPool is a pool for the Services labelled color=red, with its
// auto-assign annotation set to autoAssign.
func redPool(autoAssign string) string {
	return `
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "red-pool"
  annotations:
    lbipam.herald.io/auto-assign: "` + autoAssign + `"
spec:
  blocks:
  - cidr: "20.0.40.0/24"
  serviceSelector:
    matchLabels:
      color: red
`
}

// onlyReserved is the condition message of a Service that only the
// reserved gold-pool and red-pool select.
const onlyReserved = `IP Pools that match this service are reserved for the services that name them or request their IPs (annotation lbipam.herald.io/auto-assign: "false"): 'gold-pool', 'red-pool'`
