package allocator

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/heraldlb/herald/tables"
)

// Why two Services may not share an address, in the words of Cilium's
// isCompatible: the Service condition quotes them, as Cilium's does.
const (
	incompatibleKey        = "different sharing key"
	incompatibleNamespace  = "different and not permitted namespace"
	incompatiblePort       = "same port and protocol"
	incompatibleETP        = "different ExternalTrafficPolicy"
	incompatibleNoSelector = "ExternalTrafficPolicy local but a service has no selector"
	incompatibleLocalPods  = "ExternalTrafficPolicy local but selecting different set of pods without " + tables.AnnotationSharingPermitDifferentPods + " on both services"
)

// incompatibility says why two Services may not share an address: reason
// is Cilium's wording, for the Service condition; detail names the other
// Service and the field, for Events and herald-dbg explain. The condition
// keeps to Cilium's words, which name no other Service: a tenant learns
// nothing there about the Services of other namespaces.
type incompatibility struct {
	reason, detail string
}

// canShare reports whether two Services may hold the same IP, and if not,
// why. The rules, checked in the order of Cilium's isCompatible so that
// the first one broken is the one Cilium would name:
//   - both carry the same, non-empty sharing key;
//   - across namespaces, each lists the other's namespace (or "*") in
//     lbipam.cilium.io/sharing-cross-namespace;
//   - no (port, protocol) pair in common;
//   - the same externalTrafficPolicy, and with Local a pod selector on both
//     (without one, the Pods are not known) and the same one (traffic for
//     the IP must reach the same pods whichever port it uses), unless both
//     permit different Pods (lbipam.cilium.io/sharing-permit-different-pods).
func canShare(a, b *tables.Service) (bool, incompatibility) {
	ka, kb := a.Annotations.SharingKey, b.Annotations.SharingKey
	switch {
	case ka == "" || kb == "":
		return false, incompatibility{incompatibleKey, fmt.Sprintf("service '%s' has no sharing key", pick(ka == "", a, b).Key())}
	case ka != kb:
		return false, incompatibility{incompatibleKey, fmt.Sprintf("sharing key '%s' differs from '%s' of service '%s'", ka, kb, b.Key())}
	}
	if a.Namespace != b.Namespace {
		for _, pair := range [][2]*tables.Service{{a, b}, {b, a}} {
			if s, other := pair[0], pair[1]; !allowsNamespace(s, other.Namespace) {
				return false, incompatibility{incompatibleNamespace, fmt.Sprintf("service '%s' does not allow sharing with namespace '%s' (annotation %s)",
					s.Key(), other.Namespace, tables.AnnotationSharingCrossNS)}
			}
		}
	}
	for _, p := range a.Ports {
		if slices.Contains(b.Ports, p) {
			return false, incompatibility{incompatiblePort, fmt.Sprintf("port %s is also used by service '%s'", p, b.Key())}
		}
	}
	if etp(a) != etp(b) {
		return false, incompatibility{incompatibleETP, fmt.Sprintf("externalTrafficPolicy %s differs from %s of service '%s'", etp(a), etp(b), b.Key())}
	}
	if etp(a) == string(corev1.ServiceExternalTrafficPolicyLocal) {
		return sameLocalPods(a, b)
	}
	return true, incompatibility{}
}

// incompatibleMessage is Cilium's condition message for a requested IP
// held by Services the requester may not join.
func incompatibleMessage(a netip.Addr, why incompatibility) string {
	return fmt.Sprintf("The IP '%s' is already allocated to an incompatible service. Reason: %s", a, why.reason)
}

func pick(first bool, a, b *tables.Service) *tables.Service {
	if first {
		return a
	}
	return b
}

func allowsNamespace(s *tables.Service, ns string) bool {
	return slices.Contains(s.Annotations.SharingCrossNamespace, "*") ||
		slices.Contains(s.Annotations.SharingCrossNamespace, ns)
}

// etp normalises an unset externalTrafficPolicy to Cluster, its default.
func etp(s *tables.Service) string {
	if s.ExternalTrafficPolicy == "" {
		return string(corev1.ServiceExternalTrafficPolicyCluster)
	}
	return s.ExternalTrafficPolicy
}

// sameLocalPods: two Services with externalTrafficPolicy Local may share
// only if both select their Pods by a selector (LB IPAM cannot tell which
// Pods an Endpoints-backed Service has) and the same Pods, or both permit
// different ones.
func sameLocalPods(a, b *tables.Service) (bool, incompatibility) {
	switch {
	case a.PodSelector == "" || b.PodSelector == "":
		return false, incompatibility{incompatibleNoSelector,
			fmt.Sprintf("externalTrafficPolicy Local needs a pod selector, and service '%s' has none", pick(a.PodSelector == "", a, b).Key())}
	case a.PodSelector == b.PodSelector:
		return true, incompatibility{}
	case a.Annotations.SharingPermitDifferentPods && b.Annotations.SharingPermitDifferentPods:
		return true, incompatibility{}
	}
	why := fmt.Sprintf("externalTrafficPolicy Local needs the same pod selector as service '%s', or %s: \"true\" on both", b.Key(), tables.AnnotationSharingPermitDifferentPods)
	for _, s := range []*tables.Service{a, b} {
		if v := s.Annotations.SharingPermitInvalid; v != "" {
			why += fmt.Sprintf(" (service '%s' has %q, not a boolean)", s.Key(), v)
		}
	}
	return false, incompatibility{incompatibleLocalPods, why}
}
