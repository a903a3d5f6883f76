package migrate

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// serviceNamespaceLabel is the label Herald (as Cilium) gives every Service
// for pool selectors: its namespace.
const serviceNamespaceLabel = "io.kubernetes.service.namespace"

// translatePool turns an IPAddressPool into the CiliumLoadBalancerIPPool of
// the same name: a Service annotated metallb.io/address-pool names the
// Herald pool of that name, so keeping it keeps the Service's pool.
func translatePool(p IPAddressPool) (*v2alpha1.CiliumLoadBalancerIPPool, []Finding) {
	pool := &v2alpha1.CiliumLoadBalancerIPPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v2alpha1.SchemeGroupVersion.String(), Kind: "CiliumLoadBalancerIPPool"},
		ObjectMeta: objectMeta(p.Object, p.Metadata.Name),
		Spec:       v2alpha1.CiliumLoadBalancerIPPoolSpec{AllowFirstLastIPs: v2alpha1.AllowFirstLastIPYes},
	}
	target := "CiliumLoadBalancerIPPool/" + pool.Name
	f := findings{source: p.Ref()}
	f.add("metadata.name", Exact, target+" metadata.name", "same name, so that metallb.io/address-pool names it")

	var blocks []netip.Prefix // every block, as prefixes or ranges' bounds, for avoidBuggyIPs
	var ranges [][2]netip.Addr
	for i, a := range p.Spec.Addresses {
		field := fmt.Sprintf("spec.addresses[%d] %q", i, a)
		block, prefix, rng, err := parseAddresses(a)
		if err != nil {
			f.add(field, None, "", err.Error()+"; MetalLB rejects it too")
			continue
		}
		pool.Spec.Blocks = append(pool.Spec.Blocks, block)
		to := fmt.Sprintf("%s spec.blocks[%d]", target, len(pool.Spec.Blocks)-1)
		if prefix.IsValid() {
			blocks = append(blocks, prefix)
			f.add(field, Exact, to+".cidr", "")
		} else {
			ranges = append(ranges, rng)
			f.add(field, Exact, to+".start/stop", "")
		}
	}

	if p.Spec.AutoAssign != nil && !*p.Spec.AutoAssign {
		setAnnotation(&pool.ObjectMeta, tables.AnnotationPoolAutoAssign, "false")
		f.add("spec.autoAssign", Exact, target+" annotation "+tables.AnnotationPoolAutoAssign+": \"false\"", "")
	} else if p.Spec.AutoAssign != nil {
		f.add("spec.autoAssign", Exact, "", "true is what every Herald pool does")
	}
	if p.Spec.AvoidBuggyIPs {
		pool.Spec.AllowFirstLastIPs = v2alpha1.AllowFirstLastIPNo
		f.findings = append(f.findings, avoidBuggyIPs(p.Ref(), target, blocks, ranges))
	}
	translateAllocation(p, pool, &f)
	return pool, f.findings
}

// parseAddresses reads one entry of spec.addresses as MetalLB does: a CIDR
// (host bits allowed, MetalLB uses the network), or "start-end".
func parseAddresses(a string) (v2alpha1.CiliumLoadBalancerIPPoolIPBlock, netip.Prefix, [2]netip.Addr, error) {
	var block v2alpha1.CiliumLoadBalancerIPPoolIPBlock
	if from, to, isRange := strings.Cut(a, "-"); isRange {
		start, err1 := netip.ParseAddr(strings.TrimSpace(from))
		stop, err2 := netip.ParseAddr(strings.TrimSpace(to))
		switch {
		case err1 != nil || err2 != nil:
			return block, netip.Prefix{}, [2]netip.Addr{}, fmt.Errorf("not an IP range")
		case start.Is4() != stop.Is4():
			return block, netip.Prefix{}, [2]netip.Addr{}, fmt.Errorf("a range across IP families")
		case stop.Less(start):
			return block, netip.Prefix{}, [2]netip.Addr{}, fmt.Errorf("the range's start is after its end")
		}
		block.Start, block.Stop = start.String(), stop.String()
		return block, netip.Prefix{}, [2]netip.Addr{start, stop}, nil
	}
	prefix, err := netip.ParsePrefix(strings.TrimSpace(a))
	if err != nil {
		return block, netip.Prefix{}, [2]netip.Addr{}, fmt.Errorf("not a CIDR")
	}
	prefix = prefix.Masked()
	block.Cidr = prefix.String()
	return block, prefix, [2]netip.Addr{}, nil
}

func setAnnotation(meta *metav1.ObjectMeta, key, value string) {
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[key] = value
}

// translateAllocation maps spec.serviceAllocation. MetalLB lets a Service
// use the pool when its namespace is listed or selected (if any are), and
// when any of the service selectors matches it (if any are). One
// LabelSelector on the Service's labels can say the first part only for
// listed namespaces, and the second only for selectors that merge.
func translateAllocation(p IPAddressPool, pool *v2alpha1.CiliumLoadBalancerIPPool, f *findings) {
	alloc := p.Spec.ServiceAllocation
	if alloc == nil {
		return
	}
	target := "CiliumLoadBalancerIPPool/" + pool.Name
	if alloc.Priority > 0 {
		setAnnotation(&pool.ObjectMeta, tables.AnnotationPoolPriority, strconv.Itoa(alloc.Priority))
		f.add("spec.serviceAllocation.priority", Exact, target+" annotation "+tables.AnnotationPoolPriority, "")
	}
	sel, ok := orSelectors(alloc.ServiceSelectors)
	if len(alloc.ServiceSelectors) > 0 {
		if ok {
			f.add("spec.serviceAllocation.serviceSelectors", Exact, target+" spec.serviceSelector", "")
		} else {
			sel = nil
			f.add("spec.serviceAllocation.serviceSelectors", None, "",
				"several selectors of which any may match cannot be one LabelSelector; the pool now serves Services none of them selects: split the pool, or give the Services one common label and select it")
		}
	}
	if len(alloc.Namespaces) > 0 {
		sel = withRequirement(sel, metav1.LabelSelectorRequirement{
			Key: serviceNamespaceLabel, Operator: metav1.LabelSelectorOpIn, Values: alloc.Namespaces,
		})
		if len(alloc.NamespaceSelectors) > 0 {
			f.add("spec.serviceAllocation.namespaces", Approximate, target+" spec.serviceSelector "+serviceNamespaceLabel+" In",
				"only the listed namespaces: those the namespaceSelectors add are left out")
		} else {
			f.add("spec.serviceAllocation.namespaces", Exact, target+" spec.serviceSelector "+serviceNamespaceLabel+" In", "")
		}
	}
	if len(alloc.NamespaceSelectors) > 0 {
		reason := "a pool's serviceSelector sees the Service's labels and its namespace's name, not the namespace's labels"
		if len(alloc.Namespaces) == 0 {
			reason += "; the pool now serves every namespace: list them in spec.serviceSelector (" + serviceNamespaceLabel + " In)"
		}
		f.add("spec.serviceAllocation.namespaceSelectors", None, "", reason)
	}
	pool.Spec.ServiceSelector = sel
}
