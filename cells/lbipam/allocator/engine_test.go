package allocator

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type poolOpt func(*v2alpha1.CiliumLoadBalancerIPPool)

func mkPool(name string, age int, blocks []string, opts ...poolOpt) *tables.LBPool {
	p := &v2alpha1.CiliumLoadBalancerIPPool{}
	p.Name = name
	p.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(age) * time.Second))
	for _, b := range blocks {
		if from, to, ok := strings.Cut(b, "-"); ok {
			p.Spec.Blocks = append(p.Spec.Blocks, v2alpha1.CiliumLoadBalancerIPPoolIPBlock{Start: from, Stop: to})
		} else if strings.Contains(b, "/") {
			p.Spec.Blocks = append(p.Spec.Blocks, v2alpha1.CiliumLoadBalancerIPPoolIPBlock{Cidr: b})
		} else {
			p.Spec.Blocks = append(p.Spec.Blocks, v2alpha1.CiliumLoadBalancerIPPoolIPBlock{Start: b})
		}
	}
	for _, o := range opts {
		o(p)
	}
	return tables.LBPoolFromK8s(p)
}

func selecting(k, v string) poolOpt {
	return func(p *v2alpha1.CiliumLoadBalancerIPPool) {
		p.Spec.ServiceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
}
func disabled(p *v2alpha1.CiliumLoadBalancerIPPool) { p.Spec.Disabled = true }
func noFirstLast(p *v2alpha1.CiliumLoadBalancerIPPool) {
	p.Spec.AllowFirstLastIPs = v2alpha1.AllowFirstLastIPNo
}

type svcOpt func(*corev1.Service)

func mkSvc(nsName string, age int, opts ...svcOpt) *tables.Service {
	ns, name, _ := strings.Cut(nsName, "/")
	s := &corev1.Service{}
	s.Namespace, s.Name = ns, name
	s.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(age) * time.Second))
	s.Spec.Type = corev1.ServiceTypeLoadBalancer
	s.Spec.Ports = []corev1.ServicePort{{Port: 1234, Protocol: corev1.ProtocolTCP}}
	for _, o := range opts {
		o(s)
	}
	return tables.ServiceFromK8s(s)
}

func label(k, v string) svcOpt {
	return func(s *corev1.Service) {
		if s.Labels == nil {
			s.Labels = map[string]string{}
		}
		s.Labels[k] = v
	}
}
func annotate(k, v string) svcOpt {
	return func(s *corev1.Service) {
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[k] = v
	}
}
func ports(ps ...int32) svcOpt {
	return func(s *corev1.Service) {
		s.Spec.Ports = nil
		for _, p := range ps {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Port: p, Protocol: corev1.ProtocolTCP})
		}
	}
}
func policy(p corev1.IPFamilyPolicy, fams ...corev1.IPFamily) svcOpt {
	return func(s *corev1.Service) { s.Spec.IPFamilyPolicy = &p; s.Spec.IPFamilies = fams }
}
func class(c string) svcOpt { return func(s *corev1.Service) { s.Spec.LoadBalancerClass = &c } }
func ingress(ips ...string) svcOpt {
	return func(s *corev1.Service) {
		for _, ip := range ips {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
	}
}
func etpLocal(sel map[string]string) svcOpt {
	return func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
		s.Spec.Selector = sel
	}
}

// decisions runs Evaluate and indexes the current decision of every Service.
type world struct {
	t *testing.T
	e *Engine
}

func newWorld(t *testing.T) *world {
	return &world{t: t, e: NewEngine(Families{IPv4: true, IPv6: true}, Responsibility{DefaultIPAM: true, L2: true})}
}

// state renders a Service's decision as "ips|reason|message".
func (w *world) state(key string) string {
	s := w.e.svcs[key]
	if s == nil || s.decision == nil {
		return "<none>"
	}
	d := s.decision
	if !d.Managed {
		return "<unmanaged>"
	}
	var ips []string
	for _, ip := range d.IPs {
		ips = append(ips, ip.Addr.String())
	}
	return fmt.Sprintf("%s|%s|%s", strings.Join(ips, ","), d.Reason, d.Message)
}

func (w *world) expect(key, want string) {
	w.t.Helper()
	w.e.Evaluate()
	if got := w.state(key); got != want {
		w.t.Errorf("%s:\n got  %s\n want %s", key, got, want)
	}
}

func (w *world) pool(name string) *tables.LBPoolStatus {
	w.e.Evaluate()
	return w.e.pools[name].status
}

func TestDormantUntilFirstPool(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertService(mkSvc("example/service-red", 0, label("color", "red")))
	w.expect("example/service-red", "<none>")
	w.e.UpsertPool(mkPool("blue-pool", 0, []string{"20.0.10.0/24"}, selecting("color", "blue")))
	w.expect("example/service-red", "|no_pool|There are no enabled CiliumLoadBalancerIPPools that match this service")
	// Relabelled to match the pool: satisfied with the lowest address.
	w.e.UpsertService(mkSvc("example/service-red", 0, label("color", "blue")))
	w.expect("example/service-red", "20.0.10.0|satisfied|")
}

func TestConflicts(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("red-pool", 10, []string{"20.0.10.0/24"}))
	w.e.UpsertPool(mkPool("blue-pool", 5, []string{"20.0.10.0/24"}))
	if st := w.pool("red-pool"); !st.Conflicting || st.ConflictMessage != "Pool conflicts since CIDR '20.0.10.0/24' overlaps CIDR '20.0.10.0/24' from IP Pool 'blue-pool'" {
		t.Fatalf("red-pool: %+v", st)
	}
	if st := w.pool("blue-pool"); st.Conflicting {
		t.Fatalf("blue-pool must not conflict: %+v", st)
	}
	// Range form, and a conflict inside one pool.
	w.e.UpsertPool(mkPool("green", 20, []string{"30.0.0.10-30.0.0.20", "30.0.0.15-30.0.0.30"}))
	if st := w.pool("green"); st.ConflictMessage != "Pool conflicts since range '30.0.0.15-30.0.0.30' overlaps range '30.0.0.10-30.0.0.20' from IP Pool 'green'" {
		t.Fatalf("green: %q", st.ConflictMessage)
	}
	// Nothing new comes from a conflicting pool, and addresses in the
	// overlap are never handed out twice.
	w.e.UpsertService(mkSvc("a/one", 1, annotate(tables.AnnotationIPs, "20.0.10.7")))
	w.expect("a/one", "20.0.10.7|satisfied|")
	w.e.DeletePool("blue-pool")
	if st := w.pool("red-pool"); st.Conflicting {
		t.Fatalf("conflict must resolve once blue-pool is gone: %+v", st)
	}
	w.expect("a/one", "20.0.10.7|satisfied|") // still valid in red-pool
	if st := w.pool("red-pool"); st.Used != "1" || st.Available != "255" {
		t.Fatalf("red-pool counts: %+v", st)
	}
}

func TestCounts(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("blue-pool", 0, []string{"10.0.10.0/24", "2004::0/64", "20.0.20.100-20.0.20.200", "1.2.3.4"}))
	st := w.pool("blue-pool")
	want := "18446744073709551974" // 256 + 2^64 + 101 + 1
	if st.Total != want || st.Available != want || st.Used != "0" {
		t.Fatalf("%+v", st)
	}
	w.e.UpsertPool(mkPool("blue-pool", 0, []string{"10.0.10.0/24", "20.0.20.100-20.0.20.200"}, noFirstLast))
	if st := w.pool("blue-pool"); st.Total != "355" { // 254 + 101: ranges keep their ends
		t.Fatalf("%+v", st)
	}
}

// A pool without blocks (valid, as in Cilium's CRD) counts nothing, gives
// nothing and conflicts with nothing; it still wakes LB IPAM up, as any
// pool does in Cilium.
func TestPoolWithoutBlocks(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertService(mkSvc("a/any", 0))
	w.e.UpsertService(mkSvc("a/asks", 1, annotate(tables.AnnotationIPs, "20.0.10.1"), annotate(tables.AnnotationSharingKey, "k")))
	w.e.UpsertPool(mkPool("empty", 0, nil))
	if st := w.pool("empty"); st.Total != "0" || st.Available != "0" || st.Used != "0" || st.Conflicting {
		t.Fatalf("status %+v", st)
	}
	w.expect("a/any", "|no_pool|There are no enabled CiliumLoadBalancerIPPools that match this service")
	w.expect("a/asks", "|no_pool|No pool exists with a CIDR containing '20.0.10.1'")
	// Next to a pool with blocks it changes nothing.
	w.e.UpsertPool(mkPool("p", 1, []string{"20.0.10.0/24"}))
	w.expect("a/any", "20.0.10.0|satisfied|")
	w.expect("a/asks", "20.0.10.1|satisfied|")
	if st := w.pool("empty"); st.Total != "0" || st.Conflicting {
		t.Fatalf("status %+v", st)
	}
	if got := w.e.Explain("a/any"); !slices.Contains(got, "Pool empty: selects the Service and has no IPv4 block.") {
		t.Fatalf("explain: %q", got)
	}
}

func TestRequestedIPs(t *testing.T) {
	tests := []struct {
		name string
		svc  *tables.Service
		want string
	}{
		{"two requested", mkSvc("example/service-blue", 1, label("color", "blue"), annotate(tables.AnnotationIPs, "20.0.10.100,20.0.10.200")),
			"20.0.10.100,20.0.10.200|satisfied|"},
		{"legacy loadBalancerIP", mkSvc("example/legacy", 1, label("color", "blue"), func(s *corev1.Service) { s.Spec.LoadBalancerIP = "20.0.10.9" }),
			"20.0.10.9|satisfied|"},
		{"outside every pool", mkSvc("example/x", 1, label("color", "blue"), annotate(tables.AnnotationIPs, "99.0.0.1")),
			"|no_pool|No pool exists with a CIDR containing '99.0.0.1'"},
		{"selector mismatch", mkSvc("example/x", 1, label("color", "red"), annotate(tables.AnnotationIPs, "20.0.10.5")),
			"|pool_selector_mismatch|The pool with the CIDR containing '20.0.10.5', doesn't select this service"},
		{"already allocated", mkSvc("example/x", 1, label("color", "blue"), annotate(tables.AnnotationIPs, "20.0.10.50")),
			"|already_allocated|The IP '20.0.10.50' is already allocated to another service"},
		// Only a Service with a sharing key is told why it may not share,
		// in Cilium's words, which name no other Service.
		{"held by a Service without a key", mkSvc("other/x", 1, label("color", "blue"), annotate(tables.AnnotationIPs, "20.0.10.50"), annotate(tables.AnnotationSharingKey, "k")),
			"|already_allocated_incompatible_service|The IP '20.0.10.50' is already allocated to an incompatible service. Reason: different sharing key"},
		{"held under another key", mkSvc("example/x", 1, label("color", "blue"), annotate(tables.AnnotationIPs, "20.0.10.51"), annotate(tables.AnnotationSharingKey, "k")),
			"|already_allocated_incompatible_service|The IP '20.0.10.51' is already allocated to an incompatible service. Reason: different sharing key"},
		{"held under a key, asked without one", mkSvc("example/x", 1, label("color", "blue"), annotate(tables.AnnotationIPs, "20.0.10.51")),
			"|already_allocated|The IP '20.0.10.51' is already allocated to another service"},
		{"reserved first", mkSvc("example/x", 1, label("color", "blue"), annotate(tables.AnnotationIPs, "20.0.11.0")),
			"|no_pool|The requested IP '20.0.11.0' is the reserved first or last IP of CIDR '20.0.11.0/24' in IP Pool 'edge' (allowFirstLastIPs: No)"},
		// As in Cilium, a disabled pool gives no new address and is as if it
		// did not exist (herald-dbg explain names it).
		{"disabled pool", mkSvc("example/x", 1, annotate(tables.AnnotationIPs, "20.0.12.1")),
			"|no_pool|No pool exists with a CIDR containing '20.0.12.1'"},
		{"unparsable", mkSvc("example/x", 1, label("color", "blue"), annotate(tables.AnnotationIPs, "20.0.10.300")),
			`|invalid_request|Invalid LB IPAM request: annotation lbipam.cilium.io/ips: invalid IP address "20.0.10.300" in "20.0.10.300"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.e.UpsertPool(mkPool("blue-pool", 0, []string{"20.0.10.0/24"}, selecting("color", "blue")))
			w.e.UpsertPool(mkPool("edge", 0, []string{"20.0.11.0/24"}, noFirstLast))
			w.e.UpsertPool(mkPool("off", 0, []string{"20.0.12.0/24"}, disabled))
			w.e.UpsertService(mkSvc("example/holder", 0, label("color", "blue"), annotate(tables.AnnotationIPs, "20.0.10.50")))
			w.e.UpsertService(mkSvc("example/keyed", 0, label("color", "blue"), annotate(tables.AnnotationIPs, "20.0.10.51"), annotate(tables.AnnotationSharingKey, "other"), ports(80)))
			w.e.UpsertService(tt.svc)
			w.expect(tt.svc.Key(), tt.want)
		})
	}
}

// Bad input never costs a Service the address it holds: an annotation that
// stops parsing keeps it (invalid_request), also across a restart, and an
// annotation emptied (no request, as in Cilium) keeps it too.
func TestRequestedIPsKeptThroughBadInput(t *testing.T) {
	const bad = `|invalid_request|Invalid LB IPAM request: annotation lbipam.cilium.io/ips: invalid IP address "foo" in "20.0.10.30,foo"`
	w := newWorld(t)
	w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/24"}))
	w.e.UpsertService(mkSvc("a/s", 0, annotate(tables.AnnotationIPs, "20.0.10.30")))
	w.expect("a/s", "20.0.10.30|satisfied|")
	w.e.UpsertService(mkSvc("a/s", 0, annotate(tables.AnnotationIPs, "20.0.10.30,foo")))
	w.expect("a/s", "20.0.10.30"+bad)

	restarted := Simulate(w.e.families, w.e.resp, []*tables.LBPool{mkPool("p", 0, []string{"20.0.10.0/24"})},
		[]*tables.Service{mkSvc("a/s", 0, annotate(tables.AnnotationIPs, "20.0.10.30,foo"), ingress("20.0.10.30"))})
	(&world{t: t, e: restarted}).expect("a/s", "20.0.10.30"+bad)

	w.e.UpsertService(mkSvc("a/s", 0, annotate(tables.AnnotationIPs, "")))
	w.expect("a/s", "20.0.10.30|satisfied|")
}

func TestSharing(t *testing.T) {
	key := func(k string) svcOpt { return annotate(tables.AnnotationSharingKey, k) }
	cross := func(v string) svcOpt { return annotate(tables.AnnotationSharingCrossNS, v) }
	permit := func(v string) svcOpt { return annotate(tables.AnnotationSharingPermitDifferentPods, v) }
	tests := []struct {
		name        string
		first, then *tables.Service
		wantThen    string
	}{
		{"same key, other port: shared", mkSvc("example/service-blue", 0, key("1234")), mkSvc("example/service-red", 1, key("1234"), ports(2345)),
			"20.0.10.0|satisfied|"},
		{"same key, same port: new IP", mkSvc("example/a", 0, key("k")), mkSvc("example/b", 1, key("k")),
			"20.0.10.1|satisfied|"},
		{"other namespace without opt-in", mkSvc("ns1/a", 0, key("k")), mkSvc("ns2/b", 1, key("k"), ports(80)),
			"20.0.10.1|satisfied|"},
		{"other namespace, both opt in", mkSvc("ns1/a", 0, key("k"), cross("ns2")), mkSvc("ns2/b", 1, key("k"), ports(80), cross("*")),
			"20.0.10.0|satisfied|"},
		{"other namespace, one side only", mkSvc("ns1/a", 0, key("k")), mkSvc("ns2/b", 1, key("k"), ports(80), cross("*")),
			"20.0.10.1|satisfied|"},
		{"traffic policy differs", mkSvc("example/a", 0, key("k")), mkSvc("example/b", 1, key("k"), ports(80), etpLocal(map[string]string{"app": "x"})),
			"20.0.10.1|satisfied|"},
		{"Local with same selector", mkSvc("example/a", 0, key("k"), etpLocal(map[string]string{"app": "x"})), mkSvc("example/b", 1, key("k"), ports(80), etpLocal(map[string]string{"app": "x"})),
			"20.0.10.0|satisfied|"},
		{"Local with same two-key selector", mkSvc("example/a", 0, key("k"), etpLocal(map[string]string{"app": "x", "tier": "web"})), mkSvc("example/b", 1, key("k"), ports(80), etpLocal(map[string]string{"tier": "web", "app": "x"})),
			"20.0.10.0|satisfied|"},
		{"Local with other selector", mkSvc("example/a", 0, key("k"), etpLocal(map[string]string{"app": "x"})), mkSvc("example/b", 1, key("k"), ports(80), etpLocal(map[string]string{"app": "y"})),
			"20.0.10.1|satisfied|"},
		{"Local, one selector holds more", mkSvc("example/a", 0, key("k"), etpLocal(map[string]string{"app": "x"})), mkSvc("example/b", 1, key("k"), ports(80), etpLocal(map[string]string{"app": "x", "tier": "web"})),
			"20.0.10.1|satisfied|"},
		{"Local without a selector", mkSvc("example/a", 0, key("k"), etpLocal(nil)), mkSvc("example/b", 1, key("k"), ports(80), etpLocal(nil)),
			"20.0.10.1|satisfied|"},
		{"Local, other selectors, both permit different Pods", mkSvc("example/a", 0, key("k"), permit("true"), etpLocal(map[string]string{"app": "x"})),
			mkSvc("example/b", 1, key("k"), ports(80), permit("true"), etpLocal(map[string]string{"app": "y"})),
			"20.0.10.0|satisfied|"},
		{"Local, other selectors, one permits", mkSvc("example/a", 0, key("k"), permit("true"), etpLocal(map[string]string{"app": "x"})),
			mkSvc("example/b", 1, key("k"), ports(80), etpLocal(map[string]string{"app": "y"})),
			"20.0.10.1|satisfied|"},
		{"Local, no selector, both permit different Pods", mkSvc("example/a", 0, key("k"), permit("true"), etpLocal(nil)),
			mkSvc("example/b", 1, key("k"), ports(80), permit("true"), etpLocal(nil)),
			"20.0.10.1|satisfied|"},
		{"Local, requested IP, no selector", mkSvc("example/a", 0, key("k"), etpLocal(map[string]string{"app": "x"})),
			mkSvc("example/b", 1, key("k"), ports(80), etpLocal(nil), annotate(tables.AnnotationIPs, "20.0.10.0")),
			"|already_allocated_incompatible_service|The IP '20.0.10.0' is already allocated to an incompatible service. Reason: ExternalTrafficPolicy local but a service has no selector"},
		{"Local, requested IP, permit not a boolean", mkSvc("example/a", 0, key("k"), permit("true"), etpLocal(map[string]string{"app": "x"})),
			mkSvc("example/b", 1, key("k"), ports(80), permit("yes please"), etpLocal(map[string]string{"app": "y"}), annotate(tables.AnnotationIPs, "20.0.10.0")),
			"|already_allocated_incompatible_service|The IP '20.0.10.0' is already allocated to an incompatible service. " +
				"Reason: ExternalTrafficPolicy local but selecting different set of pods without lbipam.cilium.io/sharing-permit-different-pods on both services"},
		{"requested IP joins the key's set", mkSvc("example/a", 0, key("k")), mkSvc("example/b", 1, key("k"), ports(80), annotate(tables.AnnotationIPs, "20.0.10.0")),
			"20.0.10.0|satisfied|"},
		{"requested IP, incompatible", mkSvc("example/a", 0, key("k")), mkSvc("example/b", 1, key("k"), annotate(tables.AnnotationIPs, "20.0.10.0")),
			"|already_allocated_incompatible_service|The IP '20.0.10.0' is already allocated to an incompatible service. Reason: same port and protocol"},
		{"requested IP, other namespace not permitted", mkSvc("ns1/a", 0, key("k"), cross("*")), mkSvc("ns2/b", 1, key("k"), ports(80), annotate(tables.AnnotationIPs, "20.0.10.0")),
			"|already_allocated_incompatible_service|The IP '20.0.10.0' is already allocated to an incompatible service. Reason: different and not permitted namespace"},
		{"requested IP, traffic policy differs", mkSvc("example/a", 0, key("k")), mkSvc("example/b", 1, key("k"), ports(80), etpLocal(map[string]string{"app": "x"}), annotate(tables.AnnotationIPs, "20.0.10.0")),
			"|already_allocated_incompatible_service|The IP '20.0.10.0' is already allocated to an incompatible service. Reason: different ExternalTrafficPolicy"},
		// Cilium checks the ports before the traffic policy, and names the
		// first rule broken.
		{"requested IP, port and traffic policy both differ", mkSvc("example/a", 0, key("k")), mkSvc("example/b", 1, key("k"), etpLocal(map[string]string{"app": "x"}), annotate(tables.AnnotationIPs, "20.0.10.0")),
			"|already_allocated_incompatible_service|The IP '20.0.10.0' is already allocated to an incompatible service. Reason: same port and protocol"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/24"}))
			w.e.UpsertService(tt.first)
			w.expect(tt.first.Key(), "20.0.10.0|satisfied|")
			w.e.UpsertService(tt.then)
			w.expect(tt.then.Key(), tt.wantThen)
		})
	}
}

// Joining an address in use is no new allocation: a Service joins its
// sharing key's address in a disabled or conflicting pool (as Cilium's
// sharing-key path does), by key or by request, while the sharing rules
// still apply and nothing new comes from such a pool.
func TestSharingJoinsAddressOfPoolGivingNothingNew(t *testing.T) {
	key := annotate(tables.AnnotationSharingKey, "k")
	red := label("color", "red")
	wants := map[string]string{
		"example/by-key":      "20.0.10.0|satisfied|",
		"example/by-request":  "20.0.10.0|satisfied|",
		"example/clash":       "|no_pool|There are no enabled CiliumLoadBalancerIPPools that match this service",
		"example/clash-asks":  "|already_allocated_incompatible_service|The IP '20.0.10.0' is already allocated to an incompatible service. Reason: same port and protocol",
		"example/no-key-asks": "|already_allocated|The IP '20.0.10.0' is already allocated to another service",
	}
	joiners := []*tables.Service{
		mkSvc("example/by-key", 1, key, red, ports(81)),
		mkSvc("example/by-request", 2, key, red, ports(82), annotate(tables.AnnotationIPs, "20.0.10.0")),
		mkSvc("example/clash", 3, key, red, ports(80)),
		mkSvc("example/clash-asks", 4, key, red, ports(80), annotate(tables.AnnotationIPs, "20.0.10.0")),
		mkSvc("example/no-key-asks", 5, red, ports(84), annotate(tables.AnnotationIPs, "20.0.10.0")),
		mkSvc("example/free-address", 6, key, red, ports(85), annotate(tables.AnnotationIPs, "20.0.10.9")),
	}
	tests := []struct {
		name string
		// stop makes red-pool, which gave 20.0.10.0, give nothing new.
		stop func(w *world)
		// wantFree is the answer to a free address of red-pool: no new one.
		wantFree string
	}{
		{"disabled", func(w *world) {
			w.e.UpsertPool(mkPool("red-pool", 1, []string{"20.0.10.0/24"}, selecting("color", "red"), disabled))
		}, "|no_pool|No pool exists with a CIDR containing '20.0.10.9'"},
		// An older pool grows over red-pool's block: red-pool conflicts. It
		// selects other Services, so red-pool still backs the address.
		{"conflicting", func(w *world) {
			w.e.UpsertPool(mkPool("blue-pool", 0, []string{"20.0.20.0/24", "20.0.10.0/24"}, selecting("color", "blue")))
		}, "|pool_selector_mismatch|The pool with the CIDR containing '20.0.10.9', doesn't select this service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.e.UpsertPool(mkPool("blue-pool", 0, []string{"20.0.20.0/24"}, selecting("color", "blue")))
			w.e.UpsertPool(mkPool("red-pool", 1, []string{"20.0.10.0/24"}, selecting("color", "red")))
			w.e.UpsertService(mkSvc("example/first", 0, key, red, ports(80)))
			w.expect("example/first", "20.0.10.0|satisfied|")
			tt.stop(w)
			w.expect("example/first", "20.0.10.0|satisfied|")
			for _, j := range joiners {
				w.e.UpsertService(j)
			}
			for _, j := range joiners {
				want, ok := wants[j.Key()]
				if !ok {
					want = tt.wantFree
				}
				w.expect(j.Key(), want)
			}
		})
	}
}

func TestSharingServiceMovesWhenPortsCollide(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/24"}))
	w.e.UpsertService(mkSvc("example/a", 0, annotate(tables.AnnotationSharingKey, "k")))
	w.e.UpsertService(mkSvc("example/b", 1, annotate(tables.AnnotationSharingKey, "k"), ports(80)))
	w.expect("example/b", "20.0.10.0|satisfied|")
	// b now uses a's port: b, the one that changed, moves; a keeps its IP.
	w.e.UpsertService(mkSvc("example/b", 1, annotate(tables.AnnotationSharingKey, "k"), ports(1234)))
	w.expect("example/b", "20.0.10.1|satisfied|")
	w.expect("example/a", "20.0.10.0|satisfied|")
}

// TestSharingJoinsOldestAddress replays Cilium's sharing-key order: of two
// addresses a Service may join, it joins the one handed out first, whatever
// their numeric order.
func TestSharingJoinsOldestAddress(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("p", 0, []string{"10.0.10.0/24"}))
	w.e.UpsertService(mkSvc("example/service-a", 0, annotate(tables.AnnotationSharingKey, "key-a"), ports(80)))
	w.e.UpsertService(mkSvc("example/service-b", 1, annotate(tables.AnnotationSharingKey, "key-a"), ports(81)))
	w.e.UpsertService(mkSvc("example/service-c", 2, annotate(tables.AnnotationSharingKey, "key-b"), ports(80)))
	w.expect("example/service-a", "10.0.10.0|satisfied|")
	w.expect("example/service-b", "10.0.10.0|satisfied|")
	w.expect("example/service-c", "10.0.10.1|satisfied|")
	w.e.DeleteService("example/service-a")
	w.e.DeleteService("example/service-b")
	w.e.Evaluate()
	// service-a comes back under key-b: port 80 collides with service-c, so
	// it gets the lowest free address, 10.0.10.0.
	w.e.UpsertService(mkSvc("example/service-a", 3, annotate(tables.AnnotationSharingKey, "key-b"), ports(80)))
	w.expect("example/service-a", "10.0.10.0|satisfied|")
	// service-b (port 81) may join either; service-c's .1 is older.
	w.e.UpsertService(mkSvc("example/service-b", 4, annotate(tables.AnnotationSharingKey, "key-b"), ports(81)))
	w.expect("example/service-b", "10.0.10.1|satisfied|")
}

func TestFamilies(t *testing.T) {
	tests := []struct {
		name string
		fams Families
		svc  *tables.Service
		want string
	}{
		{"default is IPv4", Families{true, true}, mkSvc("a/s", 0), "20.0.10.0|satisfied|"},
		{"single IPv6 from ipFamilies", Families{true, true}, mkSvc("a/s", 0, policy(corev1.IPFamilyPolicySingleStack, corev1.IPv6Protocol)), "2004::|satisfied|"},
		{"prefer dual, both enabled", Families{true, true}, mkSvc("a/s", 0, policy(corev1.IPFamilyPolicyPreferDualStack, corev1.IPv6Protocol, corev1.IPv4Protocol)), "2004::,20.0.10.0|satisfied|"},
		{"prefer dual, IPv4 only", Families{true, false}, mkSvc("a/s", 0, policy(corev1.IPFamilyPolicyPreferDualStack)), "20.0.10.0|satisfied|"},
		{"require dual, both", Families{true, true}, mkSvc("a/s", 0, policy(corev1.IPFamilyPolicyRequireDualStack)), "20.0.10.0,2004::|satisfied|"},
		{"require dual, IPv6 off", Families{true, false}, mkSvc("a/s", 0, policy(corev1.IPFamilyPolicyRequireDualStack)),
			"|ip_family_disabled|ipFamilyPolicy RequireDualStack needs IPv4 and IPv6, but IPv6 is not enabled in the agent (--enable-ipv6)"},
		// The flags decide what a Service gets by default, not what it may
		// ask for (Cilium's behaviour).
		{"single IPv6 asked, IPv6 off", Families{true, false}, mkSvc("a/s", 0, policy(corev1.IPFamilyPolicySingleStack, corev1.IPv6Protocol)), "2004::|satisfied|"},
		{"single IPv4 asked, IPv4 off", Families{false, true}, mkSvc("a/s", 0, policy(corev1.IPFamilyPolicySingleStack, corev1.IPv4Protocol)), "20.0.10.0|satisfied|"},
		{"no policy, IPv4 off", Families{false, true}, mkSvc("a/s", 0), "2004::|satisfied|"},
		{"no family enabled", Families{false, false}, mkSvc("a/s", 0), "|ip_family_disabled|Neither IPv4 nor IPv6 is enabled in the agent"},
		{"requested IPv6 IP, IPv6 off", Families{true, false}, mkSvc("a/s", 0, annotate(tables.AnnotationIPs, "2004::7")), "2004::7|satisfied|"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.e.families = tt.fams
			w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/24", "2004::/64"}))
			w.e.UpsertService(tt.svc)
			w.expect(tt.svc.Key(), tt.want)
		})
	}
}

func TestPreferDualStackPartial(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/24"}))
	w.e.UpsertService(mkSvc("a/s", 0, policy(corev1.IPFamilyPolicyPreferDualStack)))
	w.expect("a/s", "20.0.10.0|no_pool|There are no enabled CiliumLoadBalancerIPPools that match this service")
}

func TestResponsibility(t *testing.T) {
	tests := []struct {
		name string
		resp Responsibility
		svc  *tables.Service
		want bool
	}{
		{"no class", Responsibility{DefaultIPAM: true}, mkSvc("a/s", 0), true},
		{"no class, ipam none", Responsibility{}, mkSvc("a/s", 0), false},
		{"no class, ipam none, opt-in", Responsibility{}, mkSvc("a/s", 0, annotate(tables.AnnotationExternalIPsOptIn, "true")), true},
		{"l2 class, l2 on", Responsibility{L2: true}, mkSvc("a/s", 0, class(ClassL2Announcer)), true},
		{"l2 class, l2 off", Responsibility{DefaultIPAM: true}, mkSvc("a/s", 0, class(ClassL2Announcer)), false},
		{"bgp class, bgp on", Responsibility{BGP: true}, mkSvc("a/s", 0, class(ClassBGP)), true},
		{"foreign class", Responsibility{DefaultIPAM: true, L2: true, BGP: true}, mkSvc("a/s", 0, class("example.com/lb")), false},
		{"ClusterIP", Responsibility{DefaultIPAM: true}, mkSvc("a/s", 0, func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP }), false},
	}
	for _, tt := range tests {
		if got := tt.resp.Handles(tt.svc); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestLeavingResponsibilityReleases(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/31"}))
	w.e.UpsertService(mkSvc("a/s", 0))
	w.expect("a/s", "20.0.10.0|satisfied|")
	w.e.UpsertService(mkSvc("a/s", 0, class("example.com/other")))
	w.expect("a/s", "<unmanaged>")
	w.e.UpsertService(mkSvc("a/t", 1))
	w.expect("a/t", "20.0.10.0|satisfied|")
}

func TestOutOfIPsThenFreed(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("tiny", 0, []string{"20.0.10.0/32"}))
	w.e.UpsertService(mkSvc("a/one", 0))
	w.e.UpsertService(mkSvc("a/two", 1))
	w.expect("a/one", "20.0.10.0|satisfied|")
	w.expect("a/two", "|out_of_ips|All enabled CiliumLoadBalancerIPPools that match this service ran out of allocatable IPs")
	w.e.DeleteService("a/one")
	w.expect("a/two", "20.0.10.0|satisfied|")
}

func TestDisabledPoolKeepsAllocations(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("blue-pool", 0, []string{"20.0.10.0/24"}))
	w.e.UpsertService(mkSvc("a/one", 0))
	w.expect("a/one", "20.0.10.0|satisfied|")
	w.e.UpsertPool(mkPool("blue-pool", 0, []string{"20.0.10.0/24"}, disabled))
	w.e.UpsertService(mkSvc("a/two", 1))
	w.expect("a/one", "20.0.10.0|satisfied|")
	w.expect("a/two", "|no_pool|There are no enabled CiliumLoadBalancerIPPools that match this service")
}

func TestPoolEdits(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/24", "20.0.20.0/24"}))
	w.e.UpsertService(mkSvc("a/first", 0))
	w.e.UpsertService(mkSvc("a/second", 1, annotate(tables.AnnotationIPs, "20.0.20.5")))
	w.expect("a/first", "20.0.10.0|satisfied|")
	// allowFirstLastIPs: No never revokes the (now reserved) first address.
	w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/24", "20.0.20.0/24"}, noFirstLast))
	w.expect("a/first", "20.0.10.0|satisfied|")
	// Removing the block of a/second releases its IP (with a reason).
	w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/24"}, noFirstLast))
	w.expect("a/second", "|no_pool|No pool exists with a CIDR containing '20.0.20.5'")
	if r := w.e.svcs["a/second"].decision.Released; len(r) != 1 || r[0].Reason != "the IP Pool or block it came from was removed" {
		t.Fatalf("released: %+v", r)
	}
	// A selector that no longer matches moves the Service to another pool.
	w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/24"}, selecting("x", "y")))
	w.e.UpsertPool(mkPool("q", 5, []string{"30.0.0.0/24"}))
	w.expect("a/first", "30.0.0.0|satisfied|")
}

// A pool's status written back (a new resourceVersion and conditions, the
// same spec) must not make every Service dirty: with N Services and a status
// write per burst of allocations that was O(N²) work.
func TestPoolStatusWriteEvaluatesNothing(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/24"}))
	w.e.UpsertService(mkSvc("a/first", 0))
	w.expect("a/first", "20.0.10.0|satisfied|")
	written := mkPool("p", 0, []string{"20.0.10.0/24"}, func(p *v2alpha1.CiliumLoadBalancerIPPool) {
		p.ResourceVersion = "42"
		p.Status.Conditions = []metav1.Condition{{Type: "cilium.io/IPsAvailable", Status: metav1.ConditionTrue}}
	})
	w.e.UpsertPool(written)
	if len(w.e.dirtySvcs) != 0 || len(w.e.dirtyPools) != 0 {
		t.Fatalf("a status-only change made %d Services and %d pools dirty", len(w.e.dirtySvcs), len(w.e.dirtyPools))
	}
	if w.e.pools["p"].row != written {
		t.Fatal("the engine kept the old row of the pool")
	}
	if res := w.e.Evaluate(); !res.Empty() {
		t.Fatalf("a status-only change produced %+v", res)
	}
	// A new spec still counts.
	w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/24"}, disabled))
	if len(w.e.dirtySvcs) != 1 {
		t.Fatalf("a spec change made %d Services dirty, want 1", len(w.e.dirtySvcs))
	}
}

func TestRestoreKeepsEveryIP(t *testing.T) {
	e := NewEngine(Families{IPv4: true, IPv6: true}, Responsibility{DefaultIPAM: true})
	e.UpsertPool(mkPool("p", 0, []string{"10.0.0.0/8"}))
	// Services found with IPs in their status, oldest first; "dup" claims
	// an IP the older "orig" holds and gets a new one instead.
	e.Restore(mkSvc("a/orig", 0, ingress("10.0.0.7")))
	e.Restore(mkSvc("a/dual", 1, policy(corev1.IPFamilyPolicyPreferDualStack), ingress("10.9.9.9")))
	e.Restore(mkSvc("a/dup", 2, ingress("10.0.0.7")))
	e.Restore(mkSvc("a/gone", 3, ingress("99.0.0.1")))
	e.UpsertService(mkSvc("a/new", 4))
	e.Evaluate()
	w := &world{t: t, e: e}
	w.expect("a/orig", "10.0.0.7|satisfied|")
	w.expect("a/dual", "10.9.9.9|no_pool|There are no enabled CiliumLoadBalancerIPPools that match this service")
	w.expect("a/dup", "10.0.0.0|satisfied|")
	w.expect("a/gone", "10.0.0.1|satisfied|")
	w.expect("a/new", "10.0.0.2|satisfied|")
}

func TestEvaluateIsIdempotent(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("p", 0, []string{"20.0.10.0/24"}))
	svc := mkSvc("a/s", 0)
	w.e.UpsertService(svc)
	if res := w.e.Evaluate(); len(res.Allocations) != 1 || len(res.PoolStatuses) != 1 {
		t.Fatalf("first: %+v", res)
	}
	// The status write comes back as an update with the IP in ingress.
	svc2 := *svc
	svc2.IngressIPs = []netip.Addr{netip.MustParseAddr("20.0.10.0")}
	w.e.UpsertService(&svc2)
	if res := w.e.Evaluate(); !res.Empty() {
		t.Fatalf("echo of our own write changed something: %+v", res)
	}
}
