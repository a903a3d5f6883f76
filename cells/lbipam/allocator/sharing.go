package allocator

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/heraldlb/herald/tables"
)

// canShare reports whether two Services may hold the same IP, and if not,
// why, in words a user can act on. The rules:
//   - both carry the same, non-empty sharing key;
//   - across namespaces, each lists the other's namespace (or "*") in
//     lbipam.cilium.io/sharing-cross-namespace;
//   - the same externalTrafficPolicy, and with Local a pod selector on both
//     (without one, the Pods are not known) and the same one (traffic for
//     the IP must reach the same pods whichever port it uses), unless both
//     permit different Pods (lbipam.cilium.io/sharing-permit-different-pods);
//   - no (port, protocol) pair in common.
func canShare(a, b *tables.Service) (bool, string) {
	ka, kb := a.Annotations.SharingKey, b.Annotations.SharingKey
	switch {
	case ka == "" || kb == "":
		return false, fmt.Sprintf("service '%s' has no sharing key", pick(ka == "", a, b).Key())
	case ka != kb:
		return false, fmt.Sprintf("sharing key '%s' differs from '%s' of service '%s'", ka, kb, b.Key())
	}
	if a.Namespace != b.Namespace {
		if !allowsNamespace(a, b.Namespace) {
			return false, fmt.Sprintf("service '%s' does not allow sharing with namespace '%s' (annotation %s)", a.Key(), b.Namespace, tables.AnnotationSharingCrossNS)
		}
		if !allowsNamespace(b, a.Namespace) {
			return false, fmt.Sprintf("service '%s' does not allow sharing with namespace '%s' (annotation %s)", b.Key(), a.Namespace, tables.AnnotationSharingCrossNS)
		}
	}
	if etp(a) != etp(b) {
		return false, fmt.Sprintf("externalTrafficPolicy %s differs from %s of service '%s'", etp(a), etp(b), b.Key())
	}
	if etp(a) == string(corev1.ServiceExternalTrafficPolicyLocal) {
		if ok, why := sameLocalPods(a, b); !ok {
			return false, why
		}
	}
	for _, p := range a.Ports {
		if slices.Contains(b.Ports, p) {
			return false, fmt.Sprintf("port %s is also used by service '%s'", p, b.Key())
		}
	}
	return true, ""
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
func sameLocalPods(a, b *tables.Service) (bool, string) {
	switch {
	case a.PodSelector == "" || b.PodSelector == "":
		return false, fmt.Sprintf("externalTrafficPolicy Local needs a pod selector, and service '%s' has none", pick(a.PodSelector == "", a, b).Key())
	case a.PodSelector == b.PodSelector:
		return true, ""
	case a.Annotations.SharingPermitDifferentPods && b.Annotations.SharingPermitDifferentPods:
		return true, ""
	}
	why := fmt.Sprintf("externalTrafficPolicy Local needs the same pod selector as service '%s', or %s: \"true\" on both", b.Key(), tables.AnnotationSharingPermitDifferentPods)
	for _, s := range []*tables.Service{a, b} {
		if v := s.Annotations.SharingPermitInvalid; v != "" {
			why += fmt.Sprintf(" (service '%s' has %q, not a boolean)", s.Key(), v)
		}
	}
	return false, why
}
