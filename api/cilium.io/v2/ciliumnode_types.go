package v2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cilium prints a node's CiliumInternalIP and InternalIP; Herald's
// CiliumNode has no addresses, so only the operator's error (with -o wide)
// and the age are printed.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories={cilium},singular="ciliumnode",path="ciliumnodes",scope="Cluster",shortName={cn,ciliumn}
// +kubebuilder:printcolumn:JSONPath=".status.ipam.operator-status.error",name="Operator Error",type=string,priority=1,description="why the node's pool requests could not be met"
// +kubebuilder:printcolumn:JSONPath=".metadata.creationTimestamp",name="Age",type=date
// +kubebuilder:subresource:status
// +kubebuilder:storageversion

// CiliumNode is the per-node object of multi-pool IPAM: the node's agent
// requests addresses from pools (spec.ipam.pools.requested), the allocator
// hands the node CIDRs out of them (spec.ipam.pools.allocated), and the agent
// lists the addresses it has given to pods (status.ipam.used).
type CiliumNode struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Spec holds the node's pool requests and the CIDRs allocated to it.
	Spec NodeSpec `json:"spec"`

	// Status holds the addresses in use on the node and the allocator's
	// error, if any.
	//
	// +kubebuilder:validation:Optional
	Status NodeStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CiliumNodeList is a list of CiliumNode objects.
type CiliumNodeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	// Items is the list of nodes.
	Items []CiliumNode `json:"items"`
}

// NodeSpec is the desired state of a node.
type NodeSpec struct {
	// IPAM is the node's address management: pool requests and
	// allocations.
	//
	// +kubebuilder:validation:Optional
	IPAM IPAMSpec `json:"ipam,omitempty"`
}

// NodeStatus is the observed state of a node.
type NodeStatus struct {
	// IPAM is the node's address management status.
	//
	// +kubebuilder:validation:Optional
	IPAM IPAMStatus `json:"ipam,omitempty"`
}

// IPAMSpec is the address management part of a node's spec.
type IPAMSpec struct {
	// Pools holds what the node requests from each pool and what it was
	// allocated.
	//
	// +kubebuilder:validation:Optional
	Pools IPAMPoolSpec `json:"pools,omitempty"`
}

// IPAMPoolSpec is a node's pool requests and allocations.
type IPAMPoolSpec struct {
	// Requested says how many addresses the node needs from each pool. The
	// node's agent writes it; the allocator reads it.
	//
	// +kubebuilder:validation:Optional
	Requested []IPAMPoolRequest `json:"requested,omitempty"`

	// Allocated lists the CIDRs the node holds, per pool. The allocator adds
	// CIDRs; the node's agent removes the CIDRs it has released.
	//
	// +kubebuilder:validation:Optional
	Allocated []IPAMPoolAllocation `json:"allocated,omitempty"`
}

// IPAMPoolRequest is a node's demand for addresses from one pool.
type IPAMPoolRequest struct {
	// Pool is the name of the CiliumPodIPPool.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Pool string `json:"pool"`

	// Needed is how many addresses of each family the node needs from the
	// pool; the allocator gives the node enough CIDRs to hold them.
	//
	// +kubebuilder:validation:Optional
	Needed IPAMPoolDemand `json:"needed,omitempty"`
}

// IPAMPoolDemand counts the addresses a node needs from a pool, per family.
type IPAMPoolDemand struct {
	// IPv4Addrs is the number of IPv4 addresses needed.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=0
	IPv4Addrs int `json:"ipv4-addrs,omitempty"`

	// IPv6Addrs is the number of IPv6 addresses needed.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=0
	IPv6Addrs int `json:"ipv6-addrs,omitempty"`
}

// IPAMPoolAllocation is the set of CIDRs a node holds from one pool.
type IPAMPoolAllocation struct {
	// Pool is the name of the CiliumPodIPPool the CIDRs come from.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	Pool string `json:"pool"`

	// CIDRs are the node's CIDRs from the pool.
	//
	// +kubebuilder:validation:Optional
	CIDRs []IPAMPodCIDR `json:"cidrs,omitempty"`
}

// IPAMPodCIDR is a node CIDR pods get addresses from, e.g. 10.20.3.0/24.
//
// +kubebuilder:validation:Format=cidr
type IPAMPodCIDR string

// IPAMStatus is the address management part of a node's status.
type IPAMStatus struct {
	// Used lists the addresses in use on the node, by address.
	//
	// +kubebuilder:validation:Optional
	Used AllocationMap `json:"used,omitempty"`

	// OperatorStatus is written by the allocator.
	//
	// +kubebuilder:validation:Optional
	OperatorStatus OperatorStatus `json:"operator-status,omitempty"`
}

// AllocationMap maps an address (e.g. 10.20.3.7) to its user.
type AllocationMap map[string]AllocationIP

// AllocationIP says who uses an address.
type AllocationIP struct {
	// Owner is the user of the address; Herald writes the pod as
	// "namespace/name".
	//
	// +kubebuilder:validation:Optional
	Owner string `json:"owner,omitempty"`

	// Resource is what the address belongs to; Herald writes the name of
	// the pool it came from.
	//
	// +kubebuilder:validation:Optional
	Resource string `json:"resource,omitempty"`
}

// OperatorStatus is the allocator's report on a node.
type OperatorStatus struct {
	// Error says why the node's requests could not be met; empty when they
	// were.
	//
	// +kubebuilder:validation:Optional
	Error string `json:"error,omitempty"`
}
