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

// mergeMetalLBIPs adds MetalLB's loadBalancerIPs to the request. Without a
// Cilium ips annotation (ciliumKey "") MetalLB's list is the request, and a
// bad value is an error like any other. With one, the Cilium list applies
// and a MetalLB list that says otherwise is noted in disagree.
func mergeMetalLBIPs(annotations map[string]string, ciliumKey string, ips []netip.Addr, errs, disagree []string) ([]netip.Addr, []string, []string) {
	v, key, ok := lookup(annotations, AnnotationMetalLBIPs, LegacyAnnotationMetalLBIPs)
	if !ok {
		return ips, errs, disagree
	}
	mips, err := ParseIPList(v)
	switch {
	case ciliumKey == "" && err != nil:
		errs = append(errs, fmt.Sprintf("annotation %s: %v", key, err))
		return mips, errs, disagree
	case ciliumKey == "":
		return mips, errs, disagree
	case err != nil:
		disagree = append(disagree, fmt.Sprintf("annotation %s is ignored (%v); %s applies", key, err, ciliumKey))
	case !sameAddrSet(ips, mips):
		disagree = append(disagree, fmt.Sprintf("annotation %s %q is ignored: it differs from %s %q, which applies",
			key, strings.TrimSpace(v), ciliumKey, strings.TrimSpace(annotations[ciliumKey])))
	}
	return ips, errs, disagree
}

// mergeMetalLBSharingKey takes MetalLB's allow-shared-ip as the sharing key
// unless a Cilium sharing key is set (ciliumKey); a different MetalLB key
// is then noted in disagree.
func mergeMetalLBSharingKey(annotations map[string]string, ciliumKey, sharingKey string, disagree []string) (string, []string) {
	v, key, ok := lookup(annotations, AnnotationMetalLBSharedIP, LegacyAnnotationMetalLBSharedIP)
	if !ok {
		return sharingKey, disagree
	}
	v = strings.TrimSpace(v)
	if ciliumKey == "" {
		return v, disagree
	}
	if v != sharingKey {
		disagree = append(disagree, fmt.Sprintf("annotation %s %q is ignored: it differs from %s %q, which applies",
			key, v, ciliumKey, sharingKey))
	}
	return sharingKey, disagree
}

// metalLBPool returns the pool named by MetalLB's address-pool annotation
// and the annotation's name, or "" when none is named.
func metalLBPool(annotations map[string]string) (pool, key string) {
	v, key, ok := lookup(annotations, AnnotationMetalLBPool, LegacyAnnotationMetalLBPool)
	if v = strings.TrimSpace(v); !ok || v == "" {
		return "", ""
	}
	return v, key
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
