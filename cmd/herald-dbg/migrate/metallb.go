package migrate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The MetalLB objects are decoded into the small structs below, which hold
// the fields of MetalLB v0.16's metallb.io/v1beta1 and v1beta2 API (and
// the L2Advertisement's preferredNodeSelectors of its development branch) that
// the translation reads. Importing MetalLB's Go module instead would pull
// controller-runtime and FRR's types into herald-dbg for a handful of
// fields. Unknown fields are ignored by the decoder.

// Object is the metadata every MetalLB object carries.
type Object struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	// Status is read and ignored, so that objects listed from a cluster
	// do not report it as an unknown field.
	Status any `json:"status,omitempty"`
}

// Ref names the object in the report, e.g. "IPAddressPool metallb-system/example".
func (o Object) Ref() string {
	if o.Metadata.Namespace == "" {
		return o.Kind + " " + o.Metadata.Name
	}
	return o.Kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name
}

// IPAddressPool is metallb.io/v1beta1 IPAddressPool.
type IPAddressPool struct {
	Object `json:",inline"`
	Spec   struct {
		Addresses         []string `json:"addresses"`
		AutoAssign        *bool    `json:"autoAssign,omitempty"`
		AvoidBuggyIPs     bool     `json:"avoidBuggyIPs,omitempty"`
		ServiceAllocation *struct {
			Priority           int                    `json:"priority,omitempty"`
			Namespaces         []string               `json:"namespaces,omitempty"`
			NamespaceSelectors []metav1.LabelSelector `json:"namespaceSelectors,omitempty"`
			ServiceSelectors   []metav1.LabelSelector `json:"serviceSelectors,omitempty"`
		} `json:"serviceAllocation,omitempty"`
	} `json:"spec"`
}

// L2Advertisement is metallb.io/v1beta1 L2Advertisement.
type L2Advertisement struct {
	Object `json:",inline"`
	Spec   struct {
		IPAddressPools         []string               `json:"ipAddressPools,omitempty"`
		IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`
		NodeSelectors          []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
		Interfaces             []string               `json:"interfaces,omitempty"`
		ServiceSelectors       []metav1.LabelSelector `json:"serviceSelectors,omitempty"`
		PreferredNodeSelectors []struct {
			Weight     int32                `json:"weight"`
			Preference metav1.LabelSelector `json:"preference"`
		} `json:"preferredNodeSelectors,omitempty"`
	} `json:"spec"`
}

// BGPPeer is metallb.io/v1beta2 BGPPeer (v1beta1 has the same fields
// but for passwordSecret and the later additions).
type BGPPeer struct {
	Object `json:",inline"`
	Spec   BGPPeerSpec `json:"spec"`
}

// BGPPeerSpec is the spec of a BGPPeer.
type BGPPeerSpec struct {
	MyASN          uint32                 `json:"myASN"`
	PeerASN        uint32                 `json:"peerASN,omitempty"`
	LocalASN       uint32                 `json:"localASN,omitempty"`
	DynamicASN     string                 `json:"dynamicASN,omitempty"`
	PeerAddress    string                 `json:"peerAddress,omitempty"`
	Interface      string                 `json:"interface,omitempty"`
	SourceAddress  string                 `json:"sourceAddress,omitempty"`
	PeerPort       uint16                 `json:"peerPort,omitempty"`
	HoldTime       *metav1.Duration       `json:"holdTime,omitempty"`
	KeepaliveTime  *metav1.Duration       `json:"keepaliveTime,omitempty"`
	ConnectTime    *metav1.Duration       `json:"connectTime,omitempty"`
	RouterID       string                 `json:"routerID,omitempty"`
	NodeSelectors  []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
	Password       string                 `json:"password,omitempty"`
	PasswordSecret struct {
		Name      string `json:"name,omitempty"`
		Namespace string `json:"namespace,omitempty"`
	} `json:"passwordSecret,omitempty"`
	BFDProfile             string `json:"bfdProfile,omitempty"`
	EnableGracefulRestart  bool   `json:"enableGracefulRestart,omitempty"`
	EBGPMultiHop           bool   `json:"ebgpMultiHop,omitempty"`
	VRF                    string `json:"vrf,omitempty"`
	DisableMP              bool   `json:"disableMP,omitempty"`
	DualStackAddressFamily bool   `json:"dualStackAddressFamily,omitempty"`
}

// BGPAdvertisement is metallb.io/v1beta1 BGPAdvertisement.
type BGPAdvertisement struct {
	Object `json:",inline"`
	Spec   struct {
		AggregationLength      *int32                 `json:"aggregationLength,omitempty"`
		AggregationLengthV6    *int32                 `json:"aggregationLengthV6,omitempty"`
		LocalPref              uint32                 `json:"localPref,omitempty"`
		Communities            []string               `json:"communities,omitempty"`
		IPAddressPools         []string               `json:"ipAddressPools,omitempty"`
		IPAddressPoolSelectors []metav1.LabelSelector `json:"ipAddressPoolSelectors,omitempty"`
		NodeSelectors          []metav1.LabelSelector `json:"nodeSelectors,omitempty"`
		Peers                  []string               `json:"peers,omitempty"`
		ServiceSelectors       []metav1.LabelSelector `json:"serviceSelectors,omitempty"`
	} `json:"spec"`
}

// Community is metallb.io/v1beta1 Community: named community values.
type Community struct {
	Object `json:",inline"`
	Spec   struct {
		Communities []struct {
			Name  string `json:"name,omitempty"`
			Value string `json:"value,omitempty"`
		} `json:"communities,omitempty"`
	} `json:"spec"`
}

// BFDProfile is metallb.io/v1beta1 BFDProfile.
type BFDProfile struct {
	Object `json:",inline"`
	Spec   struct {
		ReceiveInterval  *uint32 `json:"receiveInterval,omitempty"`
		TransmitInterval *uint32 `json:"transmitInterval,omitempty"`
		DetectMultiplier *uint32 `json:"detectMultiplier,omitempty"`
		EchoInterval     *uint32 `json:"echoInterval,omitempty"`
		EchoMode         *bool   `json:"echoMode,omitempty"`
		PassiveMode      *bool   `json:"passiveMode,omitempty"`
		MinimumTTL       *uint32 `json:"minimumTtl,omitempty"`
	} `json:"spec"`
}

// Input is the MetalLB configuration to translate.
type Input struct {
	Pools       []IPAddressPool
	L2          []L2Advertisement
	Peers       []BGPPeer
	BGPAdverts  []BGPAdvertisement
	Communities []Community
	BFDProfiles []BFDProfile
	// Findings are what decoding found: objects that are not MetalLB's,
	// fields this translation does not know.
	Findings []Finding
}
