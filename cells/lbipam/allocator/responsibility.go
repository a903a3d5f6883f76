package allocator

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/heraldlb/herald/tables"
)

// Load balancer classes handled by Herald besides "unset".
const (
	ClassL2Announcer = tables.LBClassL2Announcer
	ClassBGP         = tables.LBClassBGP
)

// Responsibility decides which Services LB IPAM gives IPs to.
type Responsibility struct {
	// DefaultIPAM is true when Services without a class are handled
	// (default-lb-service-ipam=lbipam).
	DefaultIPAM bool
	// L2, BGP: the announcers that asked for their class (tables.LBClass)
	// are on.
	L2, BGP bool
}

// ResponsibilityFor is the responsibility with the classes the features
// asked for.
func ResponsibilityFor(defaultIPAM bool, classes []tables.LBClass) Responsibility {
	r := Responsibility{DefaultIPAM: defaultIPAM}
	for _, c := range classes {
		r.L2 = r.L2 || c.Class == ClassL2Announcer
		r.BGP = r.BGP || c.Class == ClassBGP
	}
	return r
}

// Handles reports whether the Service is LB IPAM's: type LoadBalancer and
//   - no class, with default-lb-service-ipam=lbipam or the
//     io.cilium.operator.external-ips: "true" opt-in;
//   - class io.cilium/l2-announcer or io.cilium/bgp-control-plane while that
//     feature is on.
//
// Any other class is ignored entirely.
func (r Responsibility) Handles(s *tables.Service) bool {
	if s.Type != corev1.ServiceTypeLoadBalancer {
		return false
	}
	switch s.LoadBalancerClass {
	case "":
		return r.DefaultIPAM || s.Annotations.ExternalIPsOptIn
	case ClassL2Announcer:
		return r.L2
	case ClassBGP:
		return r.BGP
	}
	return false
}
