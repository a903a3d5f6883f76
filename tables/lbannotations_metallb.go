package tables

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// MetalLB's Service annotations, read so that Services written for MetalLB
// keep their addresses under Herald. The metallb.universe.tf/ spellings are
// MetalLB's older names; as in MetalLB, the metallb.io/ one is read first.
const (
	AnnotationMetalLBIPs            = "metallb.io/loadBalancerIPs"
	AnnotationMetalLBPool           = "metallb.io/address-pool"
	AnnotationMetalLBSharedIP       = "metallb.io/allow-shared-ip"
	LegacyAnnotationMetalLBIPs      = "metallb.universe.tf/loadBalancerIPs"
	LegacyAnnotationMetalLBPool     = "metallb.universe.tf/address-pool"
	LegacyAnnotationMetalLBSharedIP = "metallb.universe.tf/allow-shared-ip"
)

// A MetalLB annotation may be set under both of its spellings. As in
// MetalLB, metallb.io/ applies; the other is ignored, and when it says
// something else the Service is told (disagree), as when a Cilium
// annotation overrides a MetalLB one: a contradiction is never silent.

// spelled is one spelling of an annotation and its value.
type spelled struct{ key, value string }

// spellings returns the spellings of an annotation that carry a value, the
// one that applies first. A blank value is no request and, as in lookup,
// hides the older spellings behind it.
func spellings(annotations map[string]string, keys ...string) []spelled {
	var out []spelled
	for _, k := range keys {
		v, found := annotations[k]
		switch {
		case !found:
		case strings.TrimSpace(v) != "":
			out = append(out, spelled{k, v})
		case len(out) == 0:
			return nil
		}
	}
	return out
}

// ignored notes a spelling that is ignored because another applies.
func ignored(ig, applies spelled) string {
	return fmt.Sprintf("annotation %s %q is ignored: it differs from %s %q, which applies",
		ig.key, strings.TrimSpace(ig.value), applies.key, strings.TrimSpace(applies.value))
}

// mergeMetalLBIPs adds MetalLB's loadBalancerIPs to the request. Without a
// Cilium ips annotation (ciliumKey "") MetalLB's list is the request, and a
// bad value is an error like any other. With one, the Cilium list applies.
// A MetalLB list that says otherwise than the one that applies is noted in
// disagree.
func mergeMetalLBIPs(annotations map[string]string, ciliumKey string, ips []netip.Addr, errs, disagree []string) ([]netip.Addr, []string, []string) {
	vals := spellings(annotations, AnnotationMetalLBIPs, LegacyAnnotationMetalLBIPs)
	if len(vals) == 0 {
		return ips, errs, disagree
	}
	applies := spelled{ciliumKey, annotations[ciliumKey]}
	if ciliumKey == "" {
		applies, vals = vals[0], vals[1:]
		mips, err := ParseIPList(applies.value)
		if err != nil {
			errs = append(errs, fmt.Sprintf("annotation %s: %v", applies.key, err))
		}
		ips = mips
	}
	for _, v := range vals {
		mips, err := ParseIPList(v.value)
		switch {
		case err != nil:
			disagree = append(disagree, fmt.Sprintf("annotation %s is ignored (%v); %s applies", v.key, err, applies.key))
		case !sameAddrSet(ips, mips):
			disagree = append(disagree, ignored(v, applies))
		}
	}
	return ips, errs, disagree
}

// mergeMetalLBSharingKey takes MetalLB's allow-shared-ip as the sharing key
// unless a Cilium sharing key is set (ciliumKey); a MetalLB key that
// differs from the one that applies is noted in disagree.
func mergeMetalLBSharingKey(annotations map[string]string, ciliumKey, sharingKey string, disagree []string) (string, []string) {
	vals := spellings(annotations, AnnotationMetalLBSharedIP, LegacyAnnotationMetalLBSharedIP)
	if len(vals) == 0 {
		return sharingKey, disagree
	}
	applies := spelled{ciliumKey, sharingKey}
	if ciliumKey == "" {
		applies, vals = vals[0], vals[1:]
		sharingKey = strings.TrimSpace(applies.value)
	}
	for _, v := range vals {
		if strings.TrimSpace(v.value) != sharingKey {
			disagree = append(disagree, ignored(v, applies))
		}
	}
	return sharingKey, disagree
}

// metalLBPool returns the pool named by MetalLB's address-pool annotation
// and the annotation's name, or "" when none is named; an older spelling
// naming another pool is noted in disagree.
func metalLBPool(annotations map[string]string, disagree []string) (pool, key string, _ []string) {
	vals := spellings(annotations, AnnotationMetalLBPool, LegacyAnnotationMetalLBPool)
	if len(vals) == 0 {
		return "", "", disagree
	}
	pool = strings.TrimSpace(vals[0].value)
	for _, v := range vals[1:] {
		if strings.TrimSpace(v.value) != pool {
			disagree = append(disagree, ignored(v, vals[0]))
		}
	}
	return pool, vals[0].key, disagree
}

func sameAddrSet(a, b []netip.Addr) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}
