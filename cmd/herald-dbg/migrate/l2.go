package migrate

import (
	"fmt"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// translateL2 turns an L2Advertisement into the CiliumL2AnnouncementPolicy
// of the same name, announcing LoadBalancer addresses as MetalLB does.
func translateL2(a L2Advertisement) (*v2alpha1.CiliumL2AnnouncementPolicy, []Finding) {
	policy := &v2alpha1.CiliumL2AnnouncementPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: v2alpha1.SchemeGroupVersion.String(), Kind: "CiliumL2AnnouncementPolicy"},
		ObjectMeta: objectMeta(a.Object, a.Metadata.Name),
		Spec:       v2alpha1.CiliumL2AnnouncementPolicySpec{LoadBalancerIPs: true},
	}
	target := "CiliumL2AnnouncementPolicy/" + policy.Name
	f := findings{source: a.Ref()}
	f.add("", Exact, target+" spec.loadBalancerIPs: true", "announces the LoadBalancer addresses of the Services it selects (externalIPs: false, as MetalLB)")

	if len(a.Spec.IPAddressPools) > 0 || len(a.Spec.IPAddressPoolSelectors) > 0 {
		reason := "a CiliumL2AnnouncementPolicy selects Services by their labels, not by the pool of their address: it announces the Services of every pool. To keep other pools' Services off L2, label the Services of these pools and set spec.serviceSelector"
		if len(a.Spec.IPAddressPools) > 0 {
			f.add("spec.ipAddressPools", Approximate, target, reason)
		}
		if len(a.Spec.IPAddressPoolSelectors) > 0 {
			f.add("spec.ipAddressPoolSelectors", Approximate, target, reason)
		}
	}
	if len(a.Spec.NodeSelectors) > 0 {
		if sel, ok := orSelectors(a.Spec.NodeSelectors); ok {
			policy.Spec.NodeSelector = sel
			f.add("spec.nodeSelectors", Exact, target+" spec.nodeSelector", "")
		} else {
			f.add("spec.nodeSelectors", None, "",
				"several selectors of which any may match cannot be one LabelSelector; the policy now lets every node announce: write one policy per selector")
		}
	}
	if len(a.Spec.ServiceSelectors) > 0 {
		if sel, ok := orSelectors(a.Spec.ServiceSelectors); ok {
			policy.Spec.ServiceSelector = sel
			f.add("spec.serviceSelectors", Exact, target+" spec.serviceSelector", "")
		} else {
			f.add("spec.serviceSelectors", None, "",
				"several selectors of which any may match cannot be one LabelSelector; the policy now announces Services none of them selects: write one policy per selector")
		}
	}
	if len(a.Spec.PreferredNodeSelectors) > 0 {
		f.add("spec.preferredNodeSelectors", None, "",
			"Herald elects the announcing node among those the policy selects without preferring any; to announce only from the preferred nodes, select them with spec.nodeSelector (a hard filter: no fallback to the others)")
	}
	for i, name := range a.Spec.Interfaces {
		policy.Spec.Interfaces = append(policy.Spec.Interfaces, "^"+regexp.QuoteMeta(name)+"$")
		f.add(fmt.Sprintf("spec.interfaces[%d] %q", i, name), Exact, fmt.Sprintf("%s spec.interfaces[%d]", target, i), "a regular expression matching that name only")
	}
	return policy, f.findings
}
