package allocator

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/heraldlb/herald/tables"
)

// family is an IP family: 4 or 6.
type family int

const (
	ipv4 family = 4
	ipv6 family = 6
)

func (f family) String() string { return fmt.Sprintf("IPv%d", int(f)) }

func familyOf(a netip.Addr) family {
	if a.Is4() {
		return ipv4
	}
	return ipv6
}

func familyFromK8s(s string) (family, bool) {
	switch corev1.IPFamily(s) {
	case corev1.IPv4Protocol:
		return ipv4, true
	case corev1.IPv6Protocol:
		return ipv6, true
	}
	return 0, false
}

// Families says which IP families the agent hands out.
type Families struct{ IPv4, IPv6 bool }

func (fs Families) enabled(f family) bool {
	if f == ipv4 {
		return fs.IPv4
	}
	return fs.IPv6
}

// wantedFamilies returns the families a Service should get an IP of, in
// order, or a reason and message when its policy cannot be met:
//   - no policy or SingleStack: the family of spec.ipFamilies[0], whether
//     or not the agent hands that family out by default (the flags decide
//     what a Service gets when it does not say, not what it may ask for:
//     Cilium's behaviour); without ipFamilies, IPv4 if enabled, else IPv6;
//   - PreferDualStack: every enabled family;
//   - RequireDualStack: both, and both must be enabled.
func (fs Families) wantedFamilies(svc *tables.Service) (want []family, reason, message string) {
	switch corev1.IPFamilyPolicy(svc.IPFamilyPolicy) {
	case corev1.IPFamilyPolicyPreferDualStack:
		for _, f := range []family{ipv4, ipv6} {
			if fs.enabled(f) {
				want = append(want, f)
			}
		}
		if len(want) == 0 {
			return nil, tables.ReasonFamilyDisabled, "Neither IPv4 nor IPv6 is enabled in the agent"
		}
		return orderByPrimary(want, svc), "", ""
	case corev1.IPFamilyPolicyRequireDualStack:
		for _, f := range []family{ipv4, ipv6} {
			if !fs.enabled(f) {
				return nil, tables.ReasonFamilyDisabled,
					fmt.Sprintf("ipFamilyPolicy RequireDualStack needs IPv4 and IPv6, but %s is not enabled in the agent (--enable-ipv%d)", f, int(f))
			}
		}
		return orderByPrimary([]family{ipv4, ipv6}, svc), "", ""
	default:
		if len(svc.IPFamilies) > 0 {
			if f, ok := familyFromK8s(svc.IPFamilies[0]); ok {
				return []family{f}, "", ""
			}
		}
		for _, f := range []family{ipv4, ipv6} {
			if fs.enabled(f) {
				return []family{f}, "", ""
			}
		}
		return nil, tables.ReasonFamilyDisabled, "Neither IPv4 nor IPv6 is enabled in the agent"
	}
}

// orderByPrimary puts the Service's primary family first, so the ingress
// list follows spec.ipFamilies.
func orderByPrimary(fams []family, svc *tables.Service) []family {
	if len(fams) == 2 && len(svc.IPFamilies) > 0 {
		if pf, ok := familyFromK8s(svc.IPFamilies[0]); ok && pf == ipv6 {
			return []family{ipv6, ipv4}
		}
	}
	return fams
}
