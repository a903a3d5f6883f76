package v2alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The printer columns make `kubectl get cpip` a one-line summary of each
// pool: its CIDRs and mask size per family, how many node CIDRs are handed
// out and how many pod addresses are in use. The API server prints a list of
// CIDRs as JSON: ["10.20.0.0/16","10.30.0.0/16"].
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories={cilium},singular="ciliumpodippool",path="ciliumpodippools",scope="Cluster",shortName={cpip}
// +kubebuilder:printcolumn:JSONPath=".spec.ipv4.cidrs",name="IPv4 CIDRs",type=string,description="the pool's IPv4 CIDRs"
// +kubebuilder:printcolumn:JSONPath=".spec.ipv4.maskSize",name="IPv4 Mask",type=integer,description="prefix length of the IPv4 CIDR each node gets"
// +kubebuilder:printcolumn:JSONPath=".spec.ipv6.cidrs",name="IPv6 CIDRs",type=string,description="the pool's IPv6 CIDRs"
// +kubebuilder:printcolumn:JSONPath=".spec.ipv6.maskSize",name="IPv6 Mask",type=integer,description="prefix length of the IPv6 CIDR each node gets"
// +kubebuilder:printcolumn:JSONPath=".status.ipv4.cidrsAllocated",name="IPv4 Allocated",type=integer,description="IPv4 node CIDRs allocated from the pool"
// +kubebuilder:printcolumn:JSONPath=".status.ipv6.cidrsAllocated",name="IPv6 Allocated",type=integer,description="IPv6 node CIDRs allocated from the pool"
// +kubebuilder:printcolumn:JSONPath=".status.ipv4.addressesInUse",name="IPv4 In Use",type=integer,description="IPv4 pod addresses in use"
// +kubebuilder:printcolumn:JSONPath=".status.ipv6.addressesInUse",name="IPv6 In Use",type=integer,description="IPv6 pod addresses in use"
// +kubebuilder:printcolumn:JSONPath=".metadata.creationTimestamp",name="Age",type=date
// +kubebuilder:subresource:status
// +kubebuilder:storageversion

// CiliumPodIPPool is a cluster-wide pool of pod addresses for multi-pool
// IPAM: nodes get CIDRs of maskSize out of the pool's CIDRs, and pods get
// addresses out of their node's CIDRs.
type CiliumPodIPPool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Spec holds the pool's CIDRs and mask size, per IP family.
	//
	// +kubebuilder:validation:Required
	Spec IPPoolSpec `json:"spec"`

	// Status is the observed state of the pool, written by Herald's agent.
	// Cilium's CiliumPodIPPool has no status; Herald adds it.
	//
	// +kubebuilder:validation:Optional
	Status CiliumPodIPPoolStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CiliumPodIPPoolList is a list of CiliumPodIPPool objects.
type CiliumPodIPPoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	// Items is the list of pools.
	Items []CiliumPodIPPool `json:"items"`
}

// The schema checks what it can check within one pool on every supported
// Kubernetes version (1.31 and newer: the CEL CIDR library, no two-variable
// comprehensions, no cel.bind, no format library). Overlaps between pools,
// CIDRs removed while nodes still use them and the deletion of a pool in use
// are the agent's to report (conditions on the pool), as they depend on other
// objects.
//
// +kubebuilder:validation:XValidation:rule="has(self.ipv4) || has(self.ipv6)",message="spec must set ipv4, ipv6 or both"

// IPPoolSpec is the desired state of a pod IP pool: its IPv4 and IPv6
// CIDRs and mask sizes. A pool serves the families it sets.
type IPPoolSpec struct {
	// IPv4 holds the pool's IPv4 CIDRs and the mask size of the node CIDRs
	// allocated from them.
	//
	// +kubebuilder:validation:Optional
	IPv4 *IPv4PoolSpec `json:"ipv4,omitempty"`

	// IPv6 holds the pool's IPv6 CIDRs and the mask size of the node CIDRs
	// allocated from them.
	//
	// +kubebuilder:validation:Optional
	IPv6 *IPv6PoolSpec `json:"ipv6,omitempty"`
}

// MaxItems=256 bounds the CIDRs of one family. The API server's CEL cost
// estimate multiplies the cost of the item rules by how many items a list may
// hold; without a bound it assumes a 3 MB list of the shortest strings, and
// refuses the CRD (the family rule is 4.8 times over its budget on 1.31 and
// 1.34 alike, measured by applying the CRD). 256 is far above any real pool
// and the limit of blocks in an LB IPAM pool.
//
// The rule on the family checks every CIDR's prefix length against maskSize;
// it skips CIDRs that the item rules already reject, and a maskSize below 1
// (Minimum rejects it), so that each mistake gets one message. It reports on
// maskSize (fieldPath). A messageExpression naming the offending CIDR would be
// nicer, but the API server estimates its cost (a filter over the list and
// string concatenation) at over 100 times its budget.

// IPv4PoolSpec is the IPv4 part of a pool.
//
// +kubebuilder:validation:XValidation:rule="self.maskSize < 1 || self.cidrs.all(c, !isCIDR(c) || cidr(c).ip().family() != 4 || cidr(c).prefixLength() <= self.maskSize)",fieldPath=".maskSize",message="maskSize must be at least the prefix length of every CIDR in cidrs"
type IPv4PoolSpec struct {
	// CIDRs are the IPv4 CIDRs node CIDRs are allocated from, e.g.
	// 10.20.0.0/16.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +kubebuilder:validation:items:XValidation:rule="!isCIDR(self) || cidr(self).ip().family() == 4",message="cidrs of ipv4 must be IPv4 CIDRs"
	CIDRs []PoolCIDR `json:"cidrs"`

	// MaskSize is the prefix length of the CIDR each node gets out of
	// CIDRs, the same for every node. It cannot be changed once set.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="maskSize is immutable"
	MaskSize uint8 `json:"maskSize"`
}

// IPv6PoolSpec is the IPv6 part of a pool.
//
// +kubebuilder:validation:XValidation:rule="self.maskSize < 1 || self.cidrs.all(c, !isCIDR(c) || cidr(c).ip().family() != 6 || cidr(c).prefixLength() <= self.maskSize)",fieldPath=".maskSize",message="maskSize must be at least the prefix length of every CIDR in cidrs"
type IPv6PoolSpec struct {
	// CIDRs are the IPv6 CIDRs node CIDRs are allocated from, e.g.
	// fd00::/104.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +kubebuilder:validation:items:XValidation:rule="!isCIDR(self) || cidr(self).ip().family() == 6",message="cidrs of ipv6 must be IPv6 CIDRs"
	CIDRs []PoolCIDR `json:"cidrs"`

	// MaskSize is the prefix length of the CIDR each node gets out of
	// CIDRs, the same for every node. It cannot be changed once set.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=128
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="maskSize is immutable"
	MaskSize uint8 `json:"maskSize"`
}

// MaxLength bounds the CEL cost estimate: 45 characters are the longest
// textual IPv6 address, plus 4 for "/128". The family of a CIDR is checked
// on each list (IPv4PoolSpec, IPv6PoolSpec), as both use this type.
//
// +kubebuilder:validation:MaxLength=49
// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="cidrs must be valid CIDRs, e.g. 10.20.0.0/16 or fd00::/104"

// PoolCIDR is a CIDR of a pool, e.g. 10.20.0.0/16 or fd00::/104.
type PoolCIDR string

// CiliumPodIPPoolStatus is the observed state of a pool.
type CiliumPodIPPoolStatus struct {
	// Conditions are cilium.io/PoolConflict (the pool overlaps another),
	// cilium.io/RemovedCIDRsInUse (CIDRs removed from the spec that nodes
	// still use) and cilium.io/Terminating (the pool is being deleted while
	// nodes still use it).
	//
	// +kubebuilder:validation:Optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// IPv4 counts the pool's IPv4 allocations; absent when the pool has no
	// IPv4 part.
	//
	// +kubebuilder:validation:Optional
	IPv4 *PoolFamilyStatus `json:"ipv4,omitempty"`

	// IPv6 counts the pool's IPv6 allocations; absent when the pool has no
	// IPv6 part.
	//
	// +kubebuilder:validation:Optional
	IPv6 *PoolFamilyStatus `json:"ipv6,omitempty"`
}

// PoolFamilyStatus counts the allocations of one IP family of a pool. The
// counts are always written, zeros included, so that the printer columns show
// 0 rather than nothing.
type PoolFamilyStatus struct {
	// CIDRsAllocated is the number of node CIDRs allocated from the pool.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Minimum=0
	CIDRsAllocated int32 `json:"cidrsAllocated"`

	// CIDRsTotal is the number of node CIDRs of maskSize the pool's CIDRs
	// hold, in decimal. It is a string because it can exceed 64 bits for
	// IPv6 (a /0 split into /128s); 64 digits hold any such count.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^(0|[1-9][0-9]*)$`
	CIDRsTotal string `json:"cidrsTotal"`

	// AddressesInUse is the number of pod addresses in use in the node
	// CIDRs of the pool, as the nodes report them.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Minimum=0
	AddressesInUse int64 `json:"addressesInUse"`

	// Nodes is the number of nodes with at least one CIDR from the pool.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Minimum=0
	Nodes int32 `json:"nodes"`
}
