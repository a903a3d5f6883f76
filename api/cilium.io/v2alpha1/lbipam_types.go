package v2alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The printer columns reproduce `kubectl get ippools` from the LB IPAM spec:
// NAME DISABLED CONFLICTING IPS AVAILABLE AGE.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories={cilium},singular="ciliumloadbalancerippool",path="ciliumloadbalancerippools",scope="Cluster",shortName={ippools,ippool,lbippool,lbippools}
// +kubebuilder:printcolumn:JSONPath=".spec.disabled",name="Disabled",type=boolean
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="cilium.io/PoolConflict")].status`,name="Conflicting",type=string
// +kubebuilder:printcolumn:JSONPath=`.status.conditions[?(@.type=="cilium.io/IPsAvailable")].message`,name="IPs Available",type=string
// +kubebuilder:printcolumn:JSONPath=".metadata.creationTimestamp",name="Age",type=date
// +kubebuilder:subresource:status
// +kubebuilder:storageversion

// CiliumLoadBalancerIPPool is a pool of IPs that LB IPAM assigns to Services
// of type LoadBalancer that its service selector matches.
type CiliumLoadBalancerIPPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Spec is the desired pool: its IP blocks and which services may use it.
	//
	// +kubebuilder:validation:Required
	Spec CiliumLoadBalancerIPPoolSpec `json:"spec"`

	// Status is the observed state of the pool, written by LB IPAM: the
	// cilium.io/PoolConflict condition and the IP count conditions.
	//
	// +kubebuilder:validation:Optional
	Status CiliumLoadBalancerIPPoolStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CiliumLoadBalancerIPPoolList is a list of CiliumLoadBalancerIPPool objects.
type CiliumLoadBalancerIPPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	// Items is the list of pools.
	Items []CiliumLoadBalancerIPPool `json:"items"`
}

// CiliumLoadBalancerIPPoolSpec is the desired state of a pool.
type CiliumLoadBalancerIPPoolSpec struct {
	// The rules on matchExpressions (operator enum; values required for
	// In/NotIn, forbidden for Exists/DoesNotExist) are patched into the
	// generated schema by hack/crd-versions: metav1.LabelSelector is not our
	// type, so it cannot carry our markers.
	//
	// +kubebuilder:validation:Optional

	// ServiceSelector selects the Services that may get IPs from this pool;
	// a pool without one serves every Service. Besides labels it matches the
	// keys io.kubernetes.service.namespace and io.kubernetes.service.name.
	ServiceSelector *metav1.LabelSelector `json:"serviceSelector,omitempty"`

	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Enum=Yes;No
	// +kubebuilder:default=Yes

	// AllowFirstLastIPs set to No keeps the first (network) and last
	// (broadcast) IP of every cidr block out of allocation. It does not apply
	// to start/stop ranges nor to /31, /32, /127 and /128 CIDRs.
	AllowFirstLastIPs AllowFirstLastIPType `json:"allowFirstLastIPs,omitempty"`

	// The item limit lets the API server's CEL cost estimate fit its budget:
	// "start not after stop" is estimated at about 22k per block (128 bits of
	// IPv6) and one rule may cost at most 10M per object, so 448 would fit;
	// 256 leaves headroom.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic

	// Blocks are the CIDRs and IP ranges the pool allocates from.
	Blocks []CiliumLoadBalancerIPPoolIPBlock `json:"blocks"`

	// +kubebuilder:validation:Optional
	// +kubebuilder:default=false

	// Disabled stops new allocations from the pool; existing ones are kept.
	Disabled bool `json:"disabled"`
}

// AllowFirstLastIPType says whether the first and last IP of a CIDR may be
// allocated.
type AllowFirstLastIPType string

const (
	// AllowFirstLastIPYes allocates every IP of a CIDR (the default).
	AllowFirstLastIPYes AllowFirstLastIPType = "Yes"
	// AllowFirstLastIPNo reserves the network and broadcast IPs of a CIDR.
	AllowFirstLastIPNo AllowFirstLastIPType = "No"
)

// The API server checks blocks with CEL so that bad pools are rejected on
// apply instead of being marked conflicting later. Each rule skips inputs that
// another rule already rejects, so a user gets one message per mistake.
//
// CEL has no ordering on IPs, so "start not after stop" is built from the CIDR
// library. For each bit p, let N be start with bits p and beyond cleared:
// stop/(p+1) contains N iff stop agrees with start before bit p and has bit
// p = 0, and start/(p+1) does not contain N iff start has bit p = 1. Both hold
// for some p iff start > stop. The suffixes a = "/p" and b = "/p+1" come from
// a literal map per family, because string(p) has no size bound and would
// break the cost estimate; CRD rules have no cel.bind, hence the repeated N.
//
// +kubebuilder:validation:XValidation:rule="has(self.cidr) != has(self.start)",message="a block must set exactly one of cidr or start"
// +kubebuilder:validation:XValidation:rule="!has(self.stop) || has(self.start)",message="stop is only allowed together with start"
// +kubebuilder:validation:XValidation:rule="!has(self.start) || !has(self.stop) || !isIP(self.start) || !isIP(self.stop) || ip(self.start).family() == ip(self.stop).family()",message="start and stop must be of the same IP family"
// +kubebuilder:validation:XValidation:rule="!has(self.start) || !has(self.stop) || !isIP(self.start) || !isIP(self.stop) || ip(self.start).family() != ip(self.stop).family() || !(ip(self.start).family() == 4 ? {'/0': '/1', '/1': '/2', '/2': '/3', '/3': '/4', '/4': '/5', '/5': '/6', '/6': '/7', '/7': '/8', '/8': '/9', '/9': '/10', '/10': '/11', '/11': '/12', '/12': '/13', '/13': '/14', '/14': '/15', '/15': '/16', '/16': '/17', '/17': '/18', '/18': '/19', '/19': '/20', '/20': '/21', '/21': '/22', '/22': '/23', '/23': '/24', '/24': '/25', '/25': '/26', '/26': '/27', '/27': '/28', '/28': '/29', '/29': '/30', '/30': '/31', '/31': '/32'} : {'/0': '/1', '/1': '/2', '/2': '/3', '/3': '/4', '/4': '/5', '/5': '/6', '/6': '/7', '/7': '/8', '/8': '/9', '/9': '/10', '/10': '/11', '/11': '/12', '/12': '/13', '/13': '/14', '/14': '/15', '/15': '/16', '/16': '/17', '/17': '/18', '/18': '/19', '/19': '/20', '/20': '/21', '/21': '/22', '/22': '/23', '/23': '/24', '/24': '/25', '/25': '/26', '/26': '/27', '/27': '/28', '/28': '/29', '/29': '/30', '/30': '/31', '/31': '/32', '/32': '/33', '/33': '/34', '/34': '/35', '/35': '/36', '/36': '/37', '/37': '/38', '/38': '/39', '/39': '/40', '/40': '/41', '/41': '/42', '/42': '/43', '/43': '/44', '/44': '/45', '/45': '/46', '/46': '/47', '/47': '/48', '/48': '/49', '/49': '/50', '/50': '/51', '/51': '/52', '/52': '/53', '/53': '/54', '/54': '/55', '/55': '/56', '/56': '/57', '/57': '/58', '/58': '/59', '/59': '/60', '/60': '/61', '/61': '/62', '/62': '/63', '/63': '/64', '/64': '/65', '/65': '/66', '/66': '/67', '/67': '/68', '/68': '/69', '/69': '/70', '/70': '/71', '/71': '/72', '/72': '/73', '/73': '/74', '/74': '/75', '/75': '/76', '/76': '/77', '/77': '/78', '/78': '/79', '/79': '/80', '/80': '/81', '/81': '/82', '/82': '/83', '/83': '/84', '/84': '/85', '/85': '/86', '/86': '/87', '/87': '/88', '/88': '/89', '/89': '/90', '/90': '/91', '/91': '/92', '/92': '/93', '/93': '/94', '/94': '/95', '/95': '/96', '/96': '/97', '/97': '/98', '/98': '/99', '/99': '/100', '/100': '/101', '/101': '/102', '/102': '/103', '/103': '/104', '/104': '/105', '/105': '/106', '/106': '/107', '/107': '/108', '/108': '/109', '/109': '/110', '/110': '/111', '/111': '/112', '/112': '/113', '/113': '/114', '/114': '/115', '/115': '/116', '/116': '/117', '/117': '/118', '/118': '/119', '/119': '/120', '/120': '/121', '/121': '/122', '/122': '/123', '/123': '/124', '/124': '/125', '/125': '/126', '/126': '/127', '/127': '/128'}).exists(a, b, cidr(self.stop + b).containsIP(cidr(self.start + a).masked().ip()) && !cidr(self.start + b).containsIP(cidr(self.start + a).masked().ip()))",message="start must not be after stop"

// CiliumLoadBalancerIPPoolIPBlock is either a CIDR (cidr) or a range of IPs
// (start, and optionally stop).
type CiliumLoadBalancerIPPoolIPBlock struct {
	// MaxLength (here and below) bounds the CEL cost estimate; 45 is the
	// longest textual IPv6 address, plus 4 for "/128".
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:MaxLength=49
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="cidr must be a valid IPv4 or IPv6 CIDR, e.g. 10.0.10.0/24"

	// Cidr is a block in CIDR notation, e.g. 10.0.10.0/24 or 2004::/64.
	Cidr string `json:"cidr,omitempty"`

	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="start must be a valid IPv4 or IPv6 address"

	// Start is the first IP of a range, or the only IP when stop is omitted.
	Start string `json:"start,omitempty"`

	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:MaxLength=45
	// +kubebuilder:validation:XValidation:rule="isIP(self)",message="stop must be a valid IPv4 or IPv6 address"

	// Stop is the last IP of the range, inclusive. Omitted means the block is
	// the single IP start.
	Stop string `json:"stop,omitempty"`
}

// CiliumLoadBalancerIPPoolStatus is the observed state of a pool.
type CiliumLoadBalancerIPPoolStatus struct {
	// +kubebuilder:validation:Optional
	// +listType=map
	// +listMapKey=type

	// Conditions are cilium.io/PoolConflict, cilium.io/IPsTotal,
	// cilium.io/IPsAvailable and cilium.io/IPsUsed.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
