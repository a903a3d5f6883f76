package v2alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CiliumL2AnnouncementPolicy selects which Services' IPs are announced on
// the local network (ARP), from which nodes and over which interfaces.
//
// Selectors are deliberately not validated by the API server: a selector
// that does not parse is reported in the policy's status
// (io.cilium/bad-service-selector, io.cilium/bad-node-selector) and the
// policy then selects nothing.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories={cilium},singular="ciliuml2announcementpolicy",path="ciliuml2announcementpolicies",scope="Cluster",shortName={l2announcement}
// +kubebuilder:printcolumn:JSONPath=".metadata.creationTimestamp",name="Age",type=date
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
type CiliumL2AnnouncementPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Spec says what to announce, where and how. Optional, as in Cilium's
	// CRD: a policy without one announces nothing.
	//
	// +kubebuilder:validation:Optional
	Spec CiliumL2AnnouncementPolicySpec `json:"spec,omitempty"`

	// Status reports problems with the policy.
	//
	// +kubebuilder:validation:Optional
	Status CiliumL2AnnouncementPolicyStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CiliumL2AnnouncementPolicyList is a list of CiliumL2AnnouncementPolicy objects.
type CiliumL2AnnouncementPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	// Items is the list of policies.
	Items []CiliumL2AnnouncementPolicy `json:"items"`
}

// CiliumL2AnnouncementPolicySpec is the desired announcement behaviour.
type CiliumL2AnnouncementPolicySpec struct {
	// NodeSelector selects the nodes that may announce; without one, every
	// node is a candidate.
	//
	// +kubebuilder:validation:Optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// ServiceSelector selects the Services whose IPs are announced; without
	// one, every Service. Besides labels it matches the special keys
	// io.kubernetes.service.namespace and io.kubernetes.service.name.
	//
	// +kubebuilder:validation:Optional
	ServiceSelector *metav1.LabelSelector `json:"serviceSelector,omitempty"`

	// Interfaces are Go regular expressions, OR-ed together, that pick the
	// network devices to announce on; empty means every selected device.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=256
	Interfaces []string `json:"interfaces,omitempty"`

	// ExternalIPs announces the IPs in the Services' spec.externalIPs.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:default=false
	ExternalIPs bool `json:"externalIPs"`

	// LoadBalancerIPs announces the IPs in the Services'
	// status.loadBalancer.ingress.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:default=false
	LoadBalancerIPs bool `json:"loadBalancerIPs"`
}

// CiliumL2AnnouncementPolicyStatus holds the policy's conditions.
type CiliumL2AnnouncementPolicyStatus struct {
	// Conditions: io.cilium/bad-service-selector,
	// io.cilium/bad-node-selector and io.cilium/bad-interface-regex.
	//
	// +kubebuilder:validation:Optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
