package v2alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BGPAdvertisementType says what kind of prefixes an advertisement
// announces. More types may come; readers must skip values they do not know.
//
// +kubebuilder:validation:Enum=PodCIDR;CiliumPodIPPool;Service;Interface
type BGPAdvertisementType string

const (
	// BGPPodCIDRAdvert announces the node's pod CIDRs.
	BGPPodCIDRAdvert BGPAdvertisementType = "PodCIDR"
	// BGPCiliumPodIPPoolAdvert announces the node's CIDRs from the
	// CiliumPodIPPools the selector matches (multi-pool IPAM).
	BGPCiliumPodIPPoolAdvert BGPAdvertisementType = "CiliumPodIPPool"
	// BGPServiceAdvert announces addresses of the Services the selector
	// matches, of the kinds listed in service.addresses.
	BGPServiceAdvert BGPAdvertisementType = "Service"
	// BGPInterfaceAdvert announces the addresses of a local interface
	// (interface.name), each as a /32 or /128 (Cilium's cilium.io/v2).
	BGPInterfaceAdvert BGPAdvertisementType = "Interface"
)

// BGPServiceAddressType is a kind of Service address.
//
// +kubebuilder:validation:Enum=LoadBalancerIP;ClusterIP;ExternalIP
type BGPServiceAddressType string

const (
	// BGPLoadBalancerIPAddr is status.loadBalancer.ingress of LoadBalancer
	// Services (without a loadBalancerClass, or of
	// io.cilium/bgp-control-plane).
	BGPLoadBalancerIPAddr BGPServiceAddressType = "LoadBalancerIP"
	// BGPClusterIPAddr is spec.clusterIP(s).
	BGPClusterIPAddr BGPServiceAddressType = "ClusterIP"
	// BGPExternalIPAddr is spec.externalIPs.
	BGPExternalIPAddr BGPServiceAddressType = "ExternalIP"
)

// CiliumBGPAdvertisement says which prefixes to announce, and with which
// path attributes. CiliumBGPPeerConfig families select advertisements by
// their labels.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories={cilium,ciliumbgp},singular="ciliumbgpadvertisement",path="ciliumbgpadvertisements",scope="Cluster",shortName={cbgpadvert}
// +kubebuilder:printcolumn:JSONPath=".metadata.creationTimestamp",name="Age",type=date
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
type CiliumBGPAdvertisement struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Spec lists the advertisements.
	//
	// +kubebuilder:validation:Required
	Spec CiliumBGPAdvertisementSpec `json:"spec"`

	// Status reports problems found with the advertisements. Cilium's
	// CiliumBGPAdvertisement has no status; Herald adds it.
	//
	// +kubebuilder:validation:Optional
	Status CiliumBGPAdvertisementStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CiliumBGPAdvertisementList is a list of CiliumBGPAdvertisement objects.
type CiliumBGPAdvertisementList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	// Items is the list of advertisements.
	Items []CiliumBGPAdvertisement `json:"items"`
}

// CiliumBGPAdvertisementSpec lists advertisements.
type CiliumBGPAdvertisementSpec struct {
	// Advertisements are the prefixes to announce.
	//
	// +kubebuilder:validation:Required
	Advertisements []BGPAdvertisement `json:"advertisements"`
}

// The rule is Herald's: Cilium accepts a Service advertisement without
// service and announces nothing for it.
//
// +kubebuilder:validation:XValidation:rule="self.advertisementType != 'Service' || has(self.service)",message="advertisementType Service needs service.addresses"
// +kubebuilder:validation:XValidation:rule="self.advertisementType != 'Interface' || has(self.interface)",message="advertisementType Interface needs interface.name"

// BGPAdvertisement is one kind of prefixes to announce, the objects they
// come from and the path attributes they carry.
type BGPAdvertisement struct {
	// AdvertisementType is the kind of prefixes.
	//
	// +kubebuilder:validation:Required
	AdvertisementType BGPAdvertisementType `json:"advertisementType"`

	// Service says which addresses of the selected Services to announce;
	// required for advertisementType Service.
	//
	// +kubebuilder:validation:Optional
	Service *BGPServiceOptions `json:"service,omitempty"`

	// Interface names the local interface whose addresses are announced;
	// required for advertisementType Interface.
	//
	// +kubebuilder:validation:Optional
	Interface *BGPInterfaceOptions `json:"interface,omitempty"`

	// Selector selects the objects of the type (CiliumPodIPPools, Services)
	// by their labels; unset selects none. Not used for PodCIDR.
	//
	// +kubebuilder:validation:Optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// Attributes are path attributes added to the announced routes.
	//
	// +kubebuilder:validation:Optional
	Attributes *BGPAttributes `json:"attributes,omitempty"`
}

// BGPServiceOptions says which addresses of a Service are announced.
type BGPServiceOptions struct {
	// Addresses are the kinds of Service addresses announced.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinItems=1
	Addresses []BGPServiceAddressType `json:"addresses,omitempty"`

	// AggregationLengthIPv4 announces the IPv4 addresses as the prefix of
	// this length that holds them (one route for every Service address in
	// it) rather than each as a /32. Not for the addresses of a Service
	// with a Local traffic policy (external, or internal for ClusterIPs):
	// those stay /32, announced only by the nodes with a ready endpoint.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=31
	// +kubebuilder:validation:Optional
	AggregationLengthIPv4 *int16 `json:"aggregationLengthIPv4,omitempty"`

	// AggregationLengthIPv6 is AggregationLengthIPv4 for IPv6 addresses
	// (instead of /128).
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=127
	// +kubebuilder:validation:Optional
	AggregationLengthIPv6 *int16 `json:"aggregationLengthIPv6,omitempty"`
}

// BGPInterfaceOptions says which local interface's addresses to announce.
type BGPInterfaceOptions struct {
	// Name is the interface on each node (a loopback or dummy device
	// holding addresses to announce, say). Its addresses go out each as a
	// /32 or /128 while it is up: IPv4 global and link-local ones, IPv6
	// global ones.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// BGPAttributes are path attributes set on announced routes.
type BGPAttributes struct {
	// Communities are the BGP communities of the routes; unset means none.
	//
	// +kubebuilder:validation:Optional
	Communities *BGPCommunities `json:"communities,omitempty"`

	// LocalPreference is the local preference of the routes (iBGP peers
	// only); unset means none is set.
	//
	// +kubebuilder:validation:Optional
	LocalPreference *int64 `json:"localPreference,omitempty"`
}

// BGPStandardCommunity is a standard community (RFC 1997): a 32-bit decimal
// number or two 16-bit decimal numbers separated by a colon, e.g. 65000:100.
//
// +kubebuilder:validation:Pattern=`^([0-9]|[1-9][0-9]{1,8}|[1-3][0-9]{9}|4[01][0-9]{8}|42[0-8][0-9]{7}|429[0-3][0-9]{6}|4294[0-8][0-9]{5}|42949[0-5][0-9]{4}|429496[0-6][0-9]{3}|4294967[01][0-9]{2}|42949672[0-8][0-9]|429496729[0-5])$|^([0-9]|[1-9][0-9]{1,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]):([0-9]|[1-9][0-9]{1,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])$`
type BGPStandardCommunity string

// BGPWellKnownCommunity is a well-known standard community by name, e.g.
// no-export (65535:65281) or no-advertise (65535:65282).
//
// +kubebuilder:validation:Enum=internet;planned-shut;accept-own;route-filter-translated-v4;route-filter-v4;route-filter-translated-v6;route-filter-v6;llgr-stale;no-llgr;blackhole;no-export;no-advertise;no-export-subconfed;no-peer
type BGPWellKnownCommunity string

// BGPLargeCommunity is a large community (RFC 8092): three 32-bit decimal
// numbers separated by colons, e.g. 65000:1:100.
//
// +kubebuilder:validation:Pattern=`^([0-9]|[1-9][0-9]{1,8}|[1-3][0-9]{9}|4[01][0-9]{8}|42[0-8][0-9]{7}|429[0-3][0-9]{6}|4294[0-8][0-9]{5}|42949[0-5][0-9]{4}|429496[0-6][0-9]{3}|4294967[01][0-9]{2}|42949672[0-8][0-9]|429496729[0-5]):([0-9]|[1-9][0-9]{1,8}|[1-3][0-9]{9}|4[01][0-9]{8}|42[0-8][0-9]{7}|429[0-3][0-9]{6}|4294[0-8][0-9]{5}|42949[0-5][0-9]{4}|429496[0-6][0-9]{3}|4294967[01][0-9]{2}|42949672[0-8][0-9]|429496729[0-5]):([0-9]|[1-9][0-9]{1,8}|[1-3][0-9]{9}|4[01][0-9]{8}|42[0-8][0-9]{7}|429[0-3][0-9]{6}|4294[0-8][0-9]{5}|42949[0-5][0-9]{4}|429496[0-6][0-9]{3}|4294967[01][0-9]{2}|42949672[0-8][0-9]|429496729[0-5])$`
type BGPLargeCommunity string

// BGPCommunities are the communities set on announced routes.
type BGPCommunities struct {
	// Standard are standard communities in numeric form.
	//
	// +kubebuilder:validation:Optional
	Standard []BGPStandardCommunity `json:"standard,omitempty"`

	// WellKnown are standard communities by their well-known names.
	//
	// +kubebuilder:validation:Optional
	WellKnown []BGPWellKnownCommunity `json:"wellKnown,omitempty"`

	// Large are large communities.
	//
	// +kubebuilder:validation:Optional
	Large []BGPLargeCommunity `json:"large,omitempty"`
}

// CiliumBGPAdvertisementStatus holds the advertisement's conditions.
type CiliumBGPAdvertisementStatus struct {
	// Conditions about the advertisements (Herald's addition).
	//
	// +kubebuilder:validation:Optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
