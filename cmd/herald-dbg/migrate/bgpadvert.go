package migrate

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// LabelBGPAdvertisement labels each CiliumBGPAdvertisement made from a
// BGPAdvertisement with its name; the peer configs select by it the
// advertisements MetalLB announces to their peer.
const LabelBGPAdvertisement = "herald.io/metallb-bgp-advertisement"

// allServices selects every Service (an omitted selector selects none),
// written as Cilium's documentation does.
var allServices = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
	{Key: "somekey", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"never-used-value"}},
}}

// translateBGPAdvert turns a BGPAdvertisement into the
// CiliumBGPAdvertisement of the same name, announcing the LoadBalancer
// addresses of Services. aliases are the Community objects' names.
func translateBGPAdvert(a BGPAdvertisement, aliases map[string]string) (*v2alpha1.CiliumBGPAdvertisement, []Finding) {
	ad := v2alpha1.BGPAdvertisement{
		AdvertisementType: v2alpha1.BGPServiceAdvert,
		Service:           &v2alpha1.BGPServiceOptions{Addresses: []v2alpha1.BGPServiceAddressType{v2alpha1.BGPLoadBalancerIPAddr}},
		Selector:          allServices.DeepCopy(),
	}
	obj := &v2alpha1.CiliumBGPAdvertisement{
		TypeMeta:   metav1.TypeMeta{APIVersion: v2alpha1.SchemeGroupVersion.String(), Kind: "CiliumBGPAdvertisement"},
		ObjectMeta: objectMeta(a.Object, a.Metadata.Name),
	}
	obj.Labels = map[string]string{LabelBGPAdvertisement: a.Metadata.Name}
	target := "CiliumBGPAdvertisement/" + obj.Name
	f := findings{source: a.Ref()}
	f.add("", Exact, target+" advertisementType Service, addresses LoadBalancerIP", "")

	s := a.Spec
	poolReason := "a CiliumBGPAdvertisement selects Services by their labels, not by the pool of their address: it announces the Services of every pool. To announce only some, label their Services and narrow the selector"
	if len(s.IPAddressPools) > 0 {
		f.add("spec.ipAddressPools", Approximate, target+" selector", poolReason)
	}
	if len(s.IPAddressPoolSelectors) > 0 {
		f.add("spec.ipAddressPoolSelectors", Approximate, target+" selector", poolReason)
	}
	if len(s.ServiceSelectors) > 0 {
		if sel, ok := orSelectors(s.ServiceSelectors); ok {
			ad.Selector = sel
			f.add("spec.serviceSelectors", Exact, target+" selector", "")
		} else {
			f.add("spec.serviceSelectors", None, "",
				"several selectors of which any may match cannot be one LabelSelector; the advertisement now announces every Service: write one advertisement per selector")
		}
	}
	ad.Service.AggregationLengthIPv4 = aggregation(&f, "spec.aggregationLength", s.AggregationLength, 32, target+" service.aggregationLengthIPv4")
	ad.Service.AggregationLengthIPv6 = aggregation(&f, "spec.aggregationLengthV6", s.AggregationLengthV6, 128, target+" service.aggregationLengthIPv6")
	if s.LocalPref != 0 {
		ad.Attributes = &v2alpha1.BGPAttributes{LocalPreference: ptr.To(int64(s.LocalPref))}
		f.add("spec.localPref", Exact, target+" attributes.localPreference", "")
	}
	for i, c := range s.Communities {
		translateCommunity(&f, fmt.Sprintf("spec.communities[%d] %q", i, c), c, aliases, &ad, target)
	}
	if len(s.NodeSelectors) > 0 {
		f.add("spec.nodeSelectors", None, "", "an advertisement is announced by every node of the CiliumBGPClusterConfig; to announce from fewer nodes, give those nodes their own cluster config")
	}
	if len(s.Peers) > 0 {
		f.add("spec.peers", Exact, "CiliumBGPPeerConfig/<peer> spec.families[].advertisements", "the named peers' configs select this advertisement by its label "+LabelBGPAdvertisement)
	}
	obj.Spec.Advertisements = []v2alpha1.BGPAdvertisement{ad}
	return obj, f.findings
}

// aggregation maps an aggregation length: the host length is Herald's
// default, a shorter one Cilium's field of the same meaning.
func aggregation(f *findings, field string, length *int32, host int32, target string) *int16 {
	switch {
	case length == nil:
	case *length == host:
		f.add(field, Exact, "", fmt.Sprintf("Herald announces each address as a /%d", host))
	case *length >= 0 && *length < host:
		f.add(field, Approximate, target, "as in Cilium, the addresses of a Service with externalTrafficPolicy: Local are not aggregated: each goes alone, from the nodes with a ready endpoint")
		return ptr.To(int16(*length))
	default:
		f.add(field, None, "", fmt.Sprintf("not a prefix length of 0 to %d", host))
	}
	return nil
}

// translateCommunity resolves an alias and sorts the value into standard
// ("a:b") or large ("large:a:b:c") communities.
func translateCommunity(f *findings, field, c string, aliases map[string]string, ad *v2alpha1.BGPAdvertisement, target string) {
	value, how := c, ""
	if v, ok := aliases[c]; ok {
		value, how = v, fmt.Sprintf("alias %s = %s, from the Community object", c, v)
	}
	if ad.Attributes == nil {
		ad.Attributes = &v2alpha1.BGPAttributes{}
	}
	if ad.Attributes.Communities == nil {
		ad.Attributes.Communities = &v2alpha1.BGPCommunities{}
	}
	comm := ad.Attributes.Communities
	switch parts := strings.Split(value, ":"); {
	case len(parts) == 4 && parts[0] == "large":
		comm.Large = append(comm.Large, v2alpha1.BGPLargeCommunity(strings.TrimPrefix(value, "large:")))
		f.add(field, Exact, target+" attributes.communities.large", how)
	case len(parts) == 2:
		comm.Standard = append(comm.Standard, v2alpha1.BGPStandardCommunity(value))
		f.add(field, Exact, target+" attributes.communities.standard", how)
	default:
		f.add(field, None, "", "neither a community nor an alias of a Community object")
	}
	if len(comm.Standard) == 0 && len(comm.Large) == 0 {
		ad.Attributes.Communities = nil
		if ad.Attributes.LocalPreference == nil {
			ad.Attributes = nil
		}
	}
}
