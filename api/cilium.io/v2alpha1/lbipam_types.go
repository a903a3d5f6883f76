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
	// The selector's rules (operator enum; values required for In/NotIn,
	// forbidden for Exists/DoesNotExist; label keys and values valid) are
	// patched into the generated schema by hack/crd-versions:
	// metav1.LabelSelector is not our type, so it cannot carry our markers.
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

	// The item limit bounds the API server's CEL cost estimate, which
	// multiplies the cost of each block rule by the number of blocks a pool
	// may have; without it the estimate assumes a 3 MB request full of blocks.
	// A pool needing more blocks can use CIDRs, or be split in two.
	//
	// Optional, as in Cilium's CRD: a pool without blocks (e.g. one whose
	// blocks a tool fills in later) is valid there, so a manifest that
	// Cilium accepts applies here too. Such a pool hands out nothing.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic

	// Blocks are the CIDRs and IP ranges the pool allocates from.
	Blocks []CiliumLoadBalancerIPPoolIPBlock `json:"blocks,omitempty"`

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
// another rule already rejects, so a user gets one message per mistake. The
// rules only use what Kubernetes 1.31, the oldest version Herald supports,
// offers for CRDs: isIP/ip() and isCIDR/cidr(), no two-variable
// comprehensions (1.33) and no cel.bind.
//
// "start not after stop" is not among them: CEL has no ordering on IPs, and
// what 1.31 offers makes it a rule nobody can read. The agent reports such a
// block on the pool (condition io.cilium/bad-blocks) and allocates nothing
// from it; Cilium, too, checks this in its controller.
//
// +kubebuilder:validation:XValidation:rule="has(self.cidr) != has(self.start)",message="a block must set exactly one of cidr or start"
// +kubebuilder:validation:XValidation:rule="!has(self.stop) || has(self.start)",message="stop is only allowed together with start"
// +kubebuilder:validation:XValidation:rule="!has(self.start) || !has(self.stop) || !isIP(self.start) || !isIP(self.stop) || ip(self.start).family() == ip(self.stop).family()",message="start and stop must be of the same IP family"

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
