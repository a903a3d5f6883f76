package tables

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Annotations a Service uses to talk to LB IPAM. The io.cilium/ spellings
// are the legacy names; they are read when the new one is absent.
const (
	AnnotationIPs                = "lbipam.cilium.io/ips"
	AnnotationSharingKey         = "lbipam.cilium.io/sharing-key"
	AnnotationSharingCrossNS     = "lbipam.cilium.io/sharing-cross-namespace"
	LegacyAnnotationIPs          = "io.cilium/lb-ipam-ips"
	LegacyAnnotationSharingKey   = "io.cilium/lb-ipam-sharing-key"
	LegacyAnnotationSharingCross = "io.cilium/lb-ipam-sharing-cross-namespace"
	// AnnotationSharingPermitDifferentPods ("true" on every Service of a
	// sharing key) lets Services with externalTrafficPolicy Local share
	// an address although they select different Pods (Cilium 1.21).
	AnnotationSharingPermitDifferentPods       = "lbipam.cilium.io/sharing-permit-different-pods"
	LegacyAnnotationSharingPermitDifferentPods = "io.cilium/lb-ipam-sharing-permit-different-pods"

	// AnnotationExternalIPsOptIn asks for LB IPAM on a Service without a
	// load balancer class even when default-lb-service-ipam is "none".
	AnnotationExternalIPsOptIn = "io.cilium.operator.external-ips"
)

// LBAnnotations is what a Service asks of LB IPAM, parsed.
type LBAnnotations struct {
	// RequestedIPs from lbipam.cilium.io/ips and spec.loadBalancerIP, in
	// order, without duplicates.
	RequestedIPs []netip.Addr `json:"requestedIPs,omitempty"`
	SharingKey   string       `json:"sharingKey,omitempty"`
	// SharingCrossNamespace lists the namespaces (or "*") this Service
	// agrees to share its IPs with.
	SharingCrossNamespace []string `json:"sharingCrossNamespace,omitempty"`
	// SharingPermitDifferentPods: the Service agrees to share its
	// addresses with Local Services that select other Pods (the traffic is
	// steered to the right nodes by something else, e.g. an L4-aware load
	// balancer in front of the nodes).
	SharingPermitDifferentPods bool `json:"sharingPermitDifferentPods,omitempty"`
	// SharingPermitInvalid is that annotation's value when it is no
	// boolean: as in Cilium it then permits nothing, and the sharing rule
	// it would have relaxed says so.
	SharingPermitInvalid string `json:"sharingPermitInvalid,omitempty"`
	// ExternalIPsOptIn is io.cilium.operator.external-ips: "true".
	ExternalIPsOptIn bool `json:"externalIPsOptIn,omitempty"`
	// Pool is the CiliumLoadBalancerIPPool the Service must take its IPs
	// from (MetalLB's address-pool annotation), and PoolAnnotation the
	// annotation that named it, for messages. "" = any pool.
	Pool           string `json:"pool,omitempty"`
	PoolAnnotation string `json:"poolAnnotation,omitempty"`
	// Disagreement says which MetalLB annotations were ignored because the
	// annotation that applies to the same thing (Cilium's, or MetalLB's
	// metallb.io/ spelling) says otherwise; "" when they agree or only
	// one of them is set.
	Disagreement string `json:"disagreement,omitempty"`
	// Error describes unparsable requests, quoting the bad value. A Service
	// with an Error gets no new IPs until it is fixed.
	Error string `json:"error,omitempty"`
}

// ParseLBAnnotations parses a Service's LB IPAM annotations and its legacy
// spec.loadBalancerIP. It never fails: problems are reported in Error.
func ParseLBAnnotations(annotations map[string]string, loadBalancerIP string) LBAnnotations {
	var a LBAnnotations
	var errs []string

	ipsKey := ""
	if v, key, ok := lookup(annotations, AnnotationIPs, LegacyAnnotationIPs); ok {
		ipsKey = key
		ips, err := ParseIPList(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("annotation %s: %v", key, err))
		}
		a.RequestedIPs = ips
	}
	var disagree []string
	a.RequestedIPs, errs, disagree = mergeMetalLBIPs(annotations, ipsKey, a.RequestedIPs, errs, disagree)
	if lbip := strings.TrimSpace(loadBalancerIP); lbip != "" {
		ip, err := parseIP(lbip)
		if err != nil {
			errs = append(errs, fmt.Sprintf("spec.loadBalancerIP: %v", err))
		} else if !slices.Contains(a.RequestedIPs, ip) {
			a.RequestedIPs = append(a.RequestedIPs, ip)
		}
	}
	keyKey := ""
	if v, key, ok := lookup(annotations, AnnotationSharingKey, LegacyAnnotationSharingKey); ok {
		keyKey = key
		a.SharingKey = strings.TrimSpace(v)
	}
	a.SharingKey, disagree = mergeMetalLBSharingKey(annotations, keyKey, a.SharingKey, disagree)
	a.Pool, a.PoolAnnotation, disagree = metalLBPool(annotations, disagree)
	a.Disagreement = strings.Join(disagree, "; ")
	if v, key, ok := lookup(annotations, AnnotationSharingCrossNS, LegacyAnnotationSharingCross); ok {
		nss, err := ParseNamespaceList(v)
		if err != nil {
			errs = append(errs, fmt.Sprintf("annotation %s: %v", key, err))
		}
		a.SharingCrossNamespace = nss
	}
	if v, _, ok := lookup(annotations, AnnotationSharingPermitDifferentPods, LegacyAnnotationSharingPermitDifferentPods); ok {
		permit, err := strconv.ParseBool(strings.TrimSpace(v))
		a.SharingPermitDifferentPods = permit
		if err != nil {
			a.SharingPermitInvalid = v
		}
	}
	a.ExternalIPsOptIn = strings.EqualFold(strings.TrimSpace(annotations[AnnotationExternalIPsOptIn]), "true")
	a.Error = strings.Join(errs, "; ")
	return a
}

// lookup returns the value of the first of keys (an annotation, then its
// older spellings) that the annotations have, as Cilium's annotation.Get
// does. A blank value is no request: ok is false, as Cilium reads nothing
// from "" (a Helm template with an empty default writes exactly that), and
// as Cilium, the older spellings are not read then either.
func lookup(m map[string]string, keys ...string) (value, key string, ok bool) {
	for _, k := range keys {
		if v, found := m[k]; found {
			if strings.TrimSpace(v) == "" {
				return "", "", false
			}
			return v, k, true
		}
	}
	return "", "", false
}

// ParseIPList parses a comma separated list of IP addresses. It returns the
// addresses that parsed, and an error quoting every one that did not.
func ParseIPList(s string) ([]netip.Addr, error) {
	var ips []netip.Addr
	var bad []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		ip, err := parseIP(part)
		if err != nil {
			bad = append(bad, fmt.Sprintf("%q", part))
			continue
		}
		if !slices.Contains(ips, ip) {
			ips = append(ips, ip)
		}
	}
	if len(bad) > 0 {
		return ips, fmt.Errorf("invalid IP address %s in %q", strings.Join(bad, ", "), s)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("no IP address in %q", s)
	}
	return ips, nil
}

func parseIP(s string) (netip.Addr, error) {
	ip, err := netip.ParseAddr(s)
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("invalid IP address %q", s)
	}
	return ip.Unmap(), nil
}

// ParseNamespaceList parses the sharing-cross-namespace value: namespace
// names separated by commas, or "*".
func ParseNamespaceList(s string) ([]string, error) {
	var out, bad []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if part != "*" && !validNamespace(part) {
			bad = append(bad, fmt.Sprintf("%q", part))
			continue
		}
		out = append(out, part)
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("invalid namespace %s in %q", strings.Join(bad, ", "), s)
	}
	return out, nil
}

// validNamespace checks the DNS-1123 label form namespace names have.
func validNamespace(s string) bool {
	if len(s) > 63 {
		return false
	}
	for i, c := range s {
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}
