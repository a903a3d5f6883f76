package migrate

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// Parts of a translation that can be applied one at a time (--only). A
// takeover from a running MetalLB applies them in steps: the pools before
// Herald allocates, the L2 policies last, when MetalLB is to stop
// answering (Documentation/migrating-from-metallb.md).
const (
	PartLBIPAM = "lb-ipam" // CiliumLoadBalancerIPPool
	PartL2     = "l2"      // CiliumL2AnnouncementPolicy
	PartBGP    = "bgp"     // the BGP control plane's resources
)

// Parts are the part names, as --only takes them.
var Parts = []string{PartLBIPAM, PartL2, PartBGP}

// partOf names the part an object of Herald's belongs to.
func partOf(obj runtime.Object) string {
	switch obj.(type) {
	case *v2alpha1.CiliumLoadBalancerIPPool:
		return PartLBIPAM
	case *v2alpha1.CiliumL2AnnouncementPolicy:
		return PartL2
	default:
		return PartBGP
	}
}

// Only keeps the objects of the named parts (all of them when parts is
// empty); the findings stay whole, so the report still covers every
// MetalLB field. An unknown part is an error.
func (r Result) Only(parts []string) (Result, error) {
	if len(parts) == 0 {
		return r, nil
	}
	for _, p := range parts {
		if !slices.Contains(Parts, p) {
			return Result{}, fmt.Errorf("unknown part %q: want one or more of %s", p, strings.Join(Parts, ", "))
		}
	}
	out := Result{Findings: r.Findings}
	for _, obj := range r.Objects {
		if slices.Contains(parts, partOf(obj)) {
			out.Objects = append(out.Objects, obj)
		}
	}
	return out, nil
}
