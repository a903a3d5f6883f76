package allocator

import (
	"testing"

	"github.com/heraldlb/herald/tables"
)

// MetalLB's address-pool annotation: the Service's addresses come from that
// pool only, still subject to the pool's serviceSelector.
func TestNamedPool(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("old", 0, []string{"198.18.0.0/30"}))
	w.e.UpsertPool(mkPool("blue", 10, []string{"198.18.1.0/30"}))

	// Without the annotation the oldest pool gives; with it, the named one.
	w.e.UpsertService(mkSvc("a/any", 1))
	w.expect("a/any", "198.18.0.0|satisfied|")
	w.e.UpsertService(mkSvc("a/blue", 2, annotate(tables.AnnotationMetalLBPool, "blue")))
	w.expect("a/blue", "198.18.1.0|satisfied|")
	w.e.UpsertService(mkSvc("a/legacy", 3, annotate(tables.LegacyAnnotationMetalLBPool, "blue")))
	w.expect("a/legacy", "198.18.1.1|satisfied|")

	// A pool that does not exist: nothing from any other pool.
	w.e.UpsertService(mkSvc("a/missing", 4, annotate(tables.AnnotationMetalLBPool, "gold")))
	w.expect("a/missing", "|no_pool|IP Pool 'gold' named by annotation metallb.io/address-pool does not exist")
	// It appears: the Service gets its address from it.
	w.e.UpsertPool(mkPool("gold", 20, []string{"198.18.2.8/30"}))
	w.expect("a/missing", "198.18.2.8|satisfied|")

	// Renamed to another pool: the address moves there, as in MetalLB.
	w.e.UpsertService(mkSvc("a/any", 1, annotate(tables.AnnotationMetalLBPool, "gold")))
	w.expect("a/any", "198.18.2.9|satisfied|")
	if r := w.e.svcs["a/any"].decision.Released; len(r) != 1 || r[0].Reason != "the service asks for IP Pool 'gold' (annotation metallb.io/address-pool)" {
		t.Errorf("released %+v", r)
	}

	// The named pool is full: no fallback to a pool with room.
	w.e.UpsertService(mkSvc("a/full1", 5, annotate(tables.AnnotationMetalLBPool, "blue")))
	w.e.UpsertService(mkSvc("a/full2", 6, annotate(tables.AnnotationMetalLBPool, "blue")))
	w.expect("a/full1", "198.18.1.2|satisfied|")
	w.expect("a/full2", "198.18.1.3|satisfied|")
	w.e.UpsertService(mkSvc("a/full3", 7, annotate(tables.AnnotationMetalLBPool, "blue")))
	w.expect("a/full3", "|out_of_ips|All enabled CiliumLoadBalancerIPPools that match this service ran out of allocatable IPs")
}

func TestNamedPoolSelectorStillApplies(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("any", 0, []string{"198.18.0.0/30"}))
	w.e.UpsertPool(mkPool("red", 10, []string{"198.18.1.0/30"}, selecting("color", "red")))
	w.e.UpsertService(mkSvc("a/blue", 1, label("color", "blue"), annotate(tables.AnnotationMetalLBPool, "red")))
	w.expect("a/blue", "|pool_selector_mismatch|IP Pool 'red' named by annotation metallb.io/address-pool has a serviceSelector that does not match this service")
	w.e.UpsertService(mkSvc("a/blue", 1, label("color", "red"), annotate(tables.AnnotationMetalLBPool, "red")))
	w.expect("a/blue", "198.18.1.0|satisfied|")
	// Its pool is deleted: the address goes, and no other pool stands in.
	w.e.DeletePool("red")
	w.expect("a/blue", "|no_pool|IP Pool 'red' named by annotation metallb.io/address-pool does not exist")
}

func TestNamedPoolWithRequestedIPs(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("a", 0, []string{"198.18.0.0/24"}))
	w.e.UpsertPool(mkPool("b", 10, []string{"198.18.1.0/24", "fd00::/120"}))
	// Requested IPs inside the named pool, dual-stack, MetalLB spelling.
	w.e.UpsertService(mkSvc("n/in", 1,
		annotate(tables.AnnotationMetalLBIPs, "198.18.1.5,fd00::5"), annotate(tables.AnnotationMetalLBPool, "b")))
	w.expect("n/in", "198.18.1.5,fd00::5|satisfied|")
	// A requested IP outside it is refused, as MetalLB refuses it.
	w.e.UpsertService(mkSvc("n/out", 2,
		annotate(tables.AnnotationMetalLBIPs, "198.18.0.5"), annotate(tables.AnnotationMetalLBPool, "b")))
	w.expect("n/out", "|no_pool|The requested IP '198.18.0.5' is not in IP Pool 'b' named by annotation metallb.io/address-pool")
}

// A held address survives a restart only if it is in the named pool.
func TestNamedPoolRestore(t *testing.T) {
	e := Simulate(Families{IPv4: true}, Responsibility{DefaultIPAM: true},
		[]*tables.LBPool{mkPool("a", 0, []string{"198.18.0.0/24"}), mkPool("b", 10, []string{"198.18.1.0/24"})},
		[]*tables.Service{
			mkSvc("n/keep", 1, annotate(tables.AnnotationMetalLBPool, "b"), ingress("198.18.1.7")),
			mkSvc("n/move", 2, annotate(tables.AnnotationMetalLBPool, "b"), ingress("198.18.0.7")),
		})
	w := &world{t: t, e: e}
	w.expect("n/keep", "198.18.1.7|satisfied|")
	w.expect("n/move", "198.18.1.0|satisfied|")
}

// Sharing (MetalLB's allow-shared-ip) only joins addresses of the named pool.
func TestNamedPoolSharing(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("a", 0, []string{"198.18.0.0/24"}))
	w.e.UpsertPool(mkPool("b", 10, []string{"198.18.1.0/24"}))
	w.e.UpsertService(mkSvc("n/first", 1, annotate(tables.AnnotationMetalLBSharedIP, "k"), ports(80)))
	w.expect("n/first", "198.18.0.0|satisfied|")
	w.e.UpsertService(mkSvc("n/same", 2, annotate(tables.LegacyAnnotationMetalLBSharedIP, "k"), ports(443)))
	w.expect("n/same", "198.18.0.0|satisfied|")
	w.e.UpsertService(mkSvc("n/other", 3, annotate(tables.AnnotationMetalLBSharedIP, "k"), ports(53), annotate(tables.AnnotationMetalLBPool, "b")))
	w.expect("n/other", "198.18.1.0|satisfied|")
}

// The disagreement travels with the decision, satisfied or not.
func TestDisagreementInDecision(t *testing.T) {
	w := newWorld(t)
	w.e.UpsertPool(mkPool("a", 0, []string{"198.18.0.0/24"}))
	w.e.UpsertService(mkSvc("n/d", 1, annotate(tables.AnnotationIPs, "198.18.0.9"), annotate(tables.AnnotationMetalLBIPs, "198.18.0.10")))
	w.expect("n/d", "198.18.0.9|satisfied|")
	if d := w.e.svcs["n/d"].decision.Disagreement; d == "" {
		t.Fatal("no disagreement recorded")
	}
	w.e.UpsertService(mkSvc("n/d", 1, annotate(tables.AnnotationIPs, "198.18.0.9"), annotate(tables.AnnotationMetalLBIPs, "198.18.0.9")))
	w.expect("n/d", "198.18.0.9|satisfied|")
	if d := w.e.svcs["n/d"].decision.Disagreement; d != "" {
		t.Fatalf("agreeing annotations still disagree: %q", d)
	}
}
