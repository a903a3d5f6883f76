package lbipam

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

// Spec, "Pools": a basic pool with an IPv4 and an IPv6 CIDR, a range and a
// single IP is accepted and shown by `kubectl get ippools`.
//
// The spec shows "IPS AVAILABLE 65788", a display artefact of the original
// implementation; Herald reports the exact count:
// 256 + 2^64 + 101 + 1 = 18446744073709551974.
func TestPools(t *testing.T) {
	startAgent(t, "node-a")
	s := newScenario(t)

	s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "10.0.10.0/24"
  - cidr: "2004::0/64"
  - start: "20.0.20.100"
    stop: "20.0.20.200"
  - start: "1.2.3.4"
`)
	const count = "18446744073709551974"
	s.waitPoolCondition("blue-pool", tables.ConditionPoolConflict, metav1.ConditionFalse, tables.ReasonResolved, "")
	s.waitPoolCounts("blue-pool", count, count, "0")

	// The same, the way the spec reads it.
	jsonpath := func(typ, field string) string {
		return kubectl(t, "get", "ippools/blue-pool", "-o", fmt.Sprintf(`jsonpath={.status.conditions[?(@.type==%q)].%s}`, typ, field))
	}
	if got := jsonpath(tables.ConditionIPsAvailable, "message"); got != count {
		t.Errorf("IPsAvailable message: %q, want %q", got, count)
	}
	if got := jsonpath(tables.ConditionPoolConflict, "status"); got != "False" {
		t.Errorf("PoolConflict status: %q, want False", got)
	}

	// $ kubectl get ippools
	// NAME        DISABLED   CONFLICTING   IPS AVAILABLE   AGE
	// blue-pool   false      False         ...             2s
	out := kubectl(t, "get", "ippools")
	if header := strings.Join(table(out)[0], " "); header != "NAME DISABLED CONFLICTING IPS AVAILABLE AGE" {
		t.Errorf("kubectl get ippools header: %q\n%s", header, out)
	}
	if row := strings.Join(rowOf(t, out, "blue-pool"), " "); !strings.HasPrefix(row, "blue-pool false False "+count+" ") {
		t.Errorf("kubectl get ippools row: %q\n%s", row, out)
	}
}

// Spec, "CIDRs, Ranges and reserved IPs": allowFirstLastIPs: No reserves
// the first and last IP of CIDRs; the default (Yes) uses all of them.
func TestAllowFirstLastIPs(t *testing.T) {
	startAgent(t, "node-a")

	t.Run("No", func(t *testing.T) {
		s := newScenario(t)
		s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  allowFirstLastIPs: "No"
`)
		s.waitPoolCounts("blue-pool", "254", "254", "0")
		s.apply(serviceYAML("service-blue", nil, nil))
		s.waitSatisfied("service-blue", "20.0.10.1")
		s.waitPoolCounts("blue-pool", "254", "253", "1")
	})

	t.Run("Yes is the default", func(t *testing.T) {
		s := newScenario(t)
		s.apply(bluePool)
		s.waitPoolCounts("blue-pool", "256", "256", "0")
		if p, err := getPool("blue-pool"); err != nil || p.Spec.AllowFirstLastIPs != "Yes" {
			t.Errorf("spec.allowFirstLastIPs defaults to %q (%v), want Yes", p.Spec.AllowFirstLastIPs, err)
		}
		s.apply(serviceYAML("service-blue", nil, nil))
		s.waitSatisfied("service-blue", "20.0.10.0")
	})

	// "This option is ignored for /32 and /31 IPv4 CIDRs and /128 and /127
	// IPv6 CIDRs" and "only applies to blocks specified with cidr".
	t.Run("No is ignored for /31, /128 and ranges", func(t *testing.T) {
		s := newScenario(t)
		s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/31"
  - cidr: "2004::1/128"
  - start: "20.0.20.100"
    stop: "20.0.20.200"
  allowFirstLastIPs: "No"
`)
		s.waitPoolCounts("blue-pool", "104", "104", "0") // 2 + 1 + 101
		s.apply(serviceYAML("service-blue", nil, nil))
		s.waitSatisfied("service-blue", "20.0.10.0")
	})
}

// Spec, "Service Selectors": pools only give IPs to the Services their
// serviceSelector matches.
//
// The spec's example gives blue-pool and red-pool the same CIDR, which
// makes red-pool conflict (see "Conflicts"); here they get different CIDRs
// so both can allocate.
func TestServiceSelectors(t *testing.T) {
	startAgent(t, "node-a")

	t.Run("labels", func(t *testing.T) {
		s := newScenario(t)
		s.apply(`
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
---
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "red-pool"
spec:
  blocks:
  - cidr: "20.0.20.0/24"
  serviceSelector:
    matchLabels:
      color: red
`)
		s.apply(serviceYAML("service-blue", map[string]string{"color": "blue"}, nil))
		s.waitSatisfied("service-blue", "20.0.10.0")
		s.apply(serviceYAML("service-cyan", map[string]string{"color": "cyan"}, nil))
		s.waitSatisfied("service-cyan", "20.0.10.1")
		s.apply(serviceYAML("service-red", map[string]string{"color": "red"}, nil))
		s.waitSatisfied("service-red", "20.0.20.0")
		s.apply(serviceYAML("service-green", map[string]string{"color": "green"}, nil))
		s.waitPending("service-green", tables.ReasonNoPool, tables.MessageNoPool)
		s.apply(serviceYAML("service-plain", nil, nil))
		s.waitPending("service-plain", tables.ReasonNoPool, tables.MessageNoPool)
	})

	t.Run("io.kubernetes.service.namespace", func(t *testing.T) {
		s := newScenario(t)
		tenantA := s.namespace("tenant-a")
		s.apply(fmt.Sprintf(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  serviceSelector:
    matchLabels:
      "io.kubernetes.service.namespace": %q
`, tenantA))
		s.applyIn(tenantA, serviceYAML("service-blue", nil, nil))
		waitServiceIn(t, tenantA, "service-blue", metav1.ConditionTrue, tables.ReasonSatisfied, "", "20.0.10.0")
		// The same Service in another namespace does not match.
		s.apply(serviceYAML("service-blue", nil, nil))
		s.waitPending("service-blue", tables.ReasonNoPool, tables.MessageNoPool)
	})

	t.Run("io.kubernetes.service.name", func(t *testing.T) {
		s := newScenario(t)
		s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  serviceSelector:
    matchLabels:
      "io.kubernetes.service.name": "service-blue"
`)
		s.apply(serviceYAML("service-blue", nil, nil))
		s.waitSatisfied("service-blue", "20.0.10.0")
		s.apply(serviceYAML("service-red", nil, nil))
		s.waitPending("service-red", tables.ReasonNoPool, tables.MessageNoPool)
	})
}

// Spec, "Conflicts": the pool added last is marked Conflicting, with the
// reason and message the spec shows; the conflict resolves when the other
// pool goes away.
func TestConflicts(t *testing.T) {
	a := startAgent(t, "node-a")
	s := newScenario(t)

	s.apply(bluePool)
	s.waitPoolCondition("blue-pool", tables.ConditionPoolConflict, metav1.ConditionFalse, tables.ReasonResolved, "")
	s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "red-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
`)
	const message = "Pool conflicts since CIDR '20.0.10.0/24' overlaps CIDR '20.0.10.0/24' from IP Pool 'blue-pool'"
	s.waitPoolCondition("red-pool", tables.ConditionPoolConflict, metav1.ConditionTrue, tables.ReasonCIDROverlap, message)
	s.waitPoolCondition("blue-pool", tables.ConditionPoolConflict, metav1.ConditionFalse, tables.ReasonResolved, "")

	// $ kubectl get ippools/red-pool -o jsonpath='{.status.conditions[?(@.type=="cilium.io/PoolConflict")].message}'
	got := kubectl(t, "get", "ippools/red-pool", "-o", `jsonpath={.status.conditions[?(@.type=="cilium.io/PoolConflict")].message}`)
	if got != message {
		t.Errorf("kubectl jsonpath message:\n  have %q\n  want %q", got, message)
	}
	// $ kubectl get ippools: CONFLICTING False for blue-pool, True for red-pool.
	out := kubectl(t, "get", "ippools")
	if row := rowOf(t, out, "blue-pool"); row[1] != "false" || row[2] != "False" {
		t.Errorf("blue-pool row %q, want DISABLED false, CONFLICTING False", row)
	}
	if row := rowOf(t, out, "red-pool"); row[1] != "false" || row[2] != "True" {
		t.Errorf("red-pool row %q, want DISABLED false, CONFLICTING True", row)
	}

	// "no further allocation will happen from that pool": a new Service
	// gets its IP from blue-pool.
	s.apply(serviceYAML("service-blue", nil, nil))
	s.waitSatisfied("service-blue", "20.0.10.0")
	if rows := waitSettled(t, a, s.ns, 1, timeout); len(rows[0].IPs) != 1 || rows[0].IPs[0].Pool != "blue-pool" {
		t.Errorf("service-blue's IP should come from blue-pool: %+v", rows[0].IPs)
	}
	// Each pool counts only what it backs, as in Cilium; the address is
	// available in neither, so no pool can hand it out twice.
	s.waitPoolCounts("blue-pool", "256", "255", "1")
	s.waitPoolCounts("red-pool", "256", "255", "0")

	s.deletePool("blue-pool")
	s.waitPoolCondition("red-pool", tables.ConditionPoolConflict, metav1.ConditionFalse, tables.ReasonResolved, "")
	// The IP stays with its Service: red-pool contains it too.
	s.waitSatisfied("service-blue", "20.0.10.0")
	s.waitPoolCounts("red-pool", "256", "255", "1")
}

// Spec, "Disabling a Pool": existing allocations stay, nothing new is
// allocated.
func TestDisablingAPool(t *testing.T) {
	startAgent(t, "node-a")
	s := newScenario(t)

	s.apply(bluePool)
	s.apply(serviceYAML("service-blue", nil, nil))
	s.waitSatisfied("service-blue", "20.0.10.0")

	s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  disabled: true
`)
	// The counts are written at most once a second: wait for them before
	// reading the columns they fill.
	s.waitPoolCounts("blue-pool", "256", "255", "1")
	// $ kubectl get ippools
	// blue-pool   true       False   ...
	out := kubectl(t, "get", "ippools")
	if row := rowOf(t, out, "blue-pool"); row[1] != "true" {
		t.Errorf("blue-pool row %q, want DISABLED true", row)
	}

	s.apply(serviceYAML("service-red", nil, nil))
	s.waitPending("service-red", tables.ReasonNoPool, "There are no enabled CiliumLoadBalancerIPPools that match this service")
	s.waitPoolCondition("blue-pool", tables.ConditionPoolConflict, metav1.ConditionFalse, tables.ReasonResolved, "")
	s.waitPoolCounts("blue-pool", "256", "255", "1")
	s.waitSatisfied("service-blue", "20.0.10.0")
}

// Spec, "Status": the counts are conditions with status Unknown, reason
// noreason and the number in the message, for the pool's generation.
func TestPoolStatus(t *testing.T) {
	startAgent(t, "node-a")
	s := newScenario(t)

	s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  allowFirstLastIPs: "No"
`)
	s.waitPoolCounts("blue-pool", "254", "254", "0")
	for _, name := range []string{"service-a", "service-b", "service-c"} {
		s.apply(serviceYAML(name, nil, nil))
	}
	s.waitPoolCounts("blue-pool", "254", "251", "3")

	// $ kubectl get ippools -o jsonpath='{.items[*].status.conditions[?(@.type!="cilium.io/PoolConflict")]}'
	out := kubectl(t, "get", "ippools/blue-pool", "-o", `jsonpath={range .status.conditions[?(@.type!="cilium.io/PoolConflict")]}{.type} {.status} {.reason} {.message} {.observedGeneration}{"\n"}{end}`)
	want := "cilium.io/IPsTotal Unknown noreason 254 1\n" +
		"cilium.io/IPsAvailable Unknown noreason 251 1\n" +
		"cilium.io/IPsUsed Unknown noreason 3 1\n"
	if out != want {
		t.Errorf("pool conditions:\n have %q\n want %q", out, want)
	}
}

// A pool without blocks is valid, as in Cilium's CRD: it counts nothing
// and gives nothing, and Services it selects stay pending.
func TestPoolWithoutBlocks(t *testing.T) {
	startAgent(t, "node-a")
	s := newScenario(t)

	s.apply(`
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "empty-pool"
spec:
  serviceSelector:
    matchLabels:
      color: blue
`)
	s.waitPoolCondition("empty-pool", tables.ConditionPoolConflict, metav1.ConditionFalse, tables.ReasonResolved, "")
	s.waitPoolCounts("empty-pool", "0", "0", "0")
	s.apply(serviceYAML("service-blue", map[string]string{"color": "blue"}, nil))
	s.waitPending("service-blue", tables.ReasonNoPool, tables.MessageNoPool)
}
