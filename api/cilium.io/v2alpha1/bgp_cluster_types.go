package v2alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The BGP control plane (v2) resources follow Cilium 1.16's
// cilium.io/v2alpha1 schema field for field (names, defaults, enums, limits),
// so that Cilium's BGP manifests apply unchanged; the status conditions of
// CiliumBGPClusterConfig and CiliumBGPPeerConfig are those Cilium 1.17 added.
// Herald's additions are marked where they are. The fields Cilium's
// cilium.io/v2 added (localPort here, autoDiscovery, the override's
// localASN) are additive, so one schema serves both versions:
// hack/crd-versions serves it as cilium.io/v2 as well, v2 being the
// storage version as in Cilium. v2 dropped peerConfigRef's group and kind;
// Herald still accepts them under both versions (and ignores them, as
// Cilium always did).

// CiliumBGPClusterConfig says which nodes run BGP, with which local ASN, and
// which peers they connect to. The agent turns it into one CiliumBGPNodeConfig
// per selected node.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories={cilium,ciliumbgp},singular="ciliumbgpclusterconfig",path="ciliumbgpclusterconfigs",scope="Cluster",shortName={cbgpcluster}
// +kubebuilder:printcolumn:JSONPath=".metadata.creationTimestamp",name="Age",type=date
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
type CiliumBGPClusterConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Spec holds the node selector and the BGP instances of the selected nodes.
	//
	// +kubebuilder:validation:Required
	Spec CiliumBGPClusterConfigSpec `json:"spec"`

	// Status reports problems found with this configuration.
	//
	// +kubebuilder:validation:Optional
	Status CiliumBGPClusterConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CiliumBGPClusterConfigList is a list of CiliumBGPClusterConfig objects.
type CiliumBGPClusterConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	// Items is the list of cluster configurations.
	Items []CiliumBGPClusterConfig `json:"items"`
}

// CiliumBGPClusterConfigSpec is the desired BGP setup of a group of nodes.
type CiliumBGPClusterConfigSpec struct {
	// NodeSelector picks the nodes this configuration applies to; without
	// one it applies to every node.
	//
	// +kubebuilder:validation:Optional
	NodeSelector *metav1.LabelSelector `json:"nodeSelector,omitempty"`

	// BGPInstances are the BGP routers each selected node runs.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	BGPInstances []CiliumBGPInstance `json:"bgpInstances"`
}

// CiliumBGPInstance is one BGP router: its ASN and its peers.
type CiliumBGPInstance struct {
	// Name identifies the instance within the configuration.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name"`

	// LocalASN is the instance's own AS number (32-bit ASNs allowed).
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	LocalASN *int64 `json:"localASN,omitempty"`

	// LocalPort is the port the instance listens on for incoming sessions;
	// unset means it does not listen (Cilium's cilium.io/v2 field). A
	// node's CiliumBGPNodeConfigOverride overrides it.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	LocalPort *int32 `json:"localPort,omitempty"`

	// Peers are the BGP neighbours of the instance.
	//
	// +kubebuilder:validation:Optional
	// +listType=map
	// +listMapKey=name
	Peers []CiliumBGPPeer `json:"peers,omitempty"`
}

// CiliumBGPPeer is one BGP neighbour of an instance.
//
// +kubebuilder:validation:XValidation:rule="!has(self.peerInterface) || !has(self.peerAddress) || self.peerAddress.startsWith('fe80:') || self.peerAddress.startsWith('FE80:')",message="peerAddress must be an IPv6 link-local address (fe80::/64) when peerInterface is set"
type CiliumBGPPeer struct {
	// Name identifies the peer within its instance.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name"`

	// PeerAddress is the neighbour's IPv4 or IPv6 address.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Pattern=`((^\s*((([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5])\.){3}([0-9]|[1-9][0-9]|1[0-9]{2}|2[0-4][0-9]|25[0-5]))\s*$)|(^\s*((([0-9A-Fa-f]{1,4}:){7}([0-9A-Fa-f]{1,4}|:))|(([0-9A-Fa-f]{1,4}:){6}(:[0-9A-Fa-f]{1,4}|((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9A-Fa-f]{1,4}:){5}(((:[0-9A-Fa-f]{1,4}){1,2})|:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3})|:))|(([0-9A-Fa-f]{1,4}:){4}(((:[0-9A-Fa-f]{1,4}){1,3})|((:[0-9A-Fa-f]{1,4})?:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9A-Fa-f]{1,4}:){3}(((:[0-9A-Fa-f]{1,4}){1,4})|((:[0-9A-Fa-f]{1,4}){0,2}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9A-Fa-f]{1,4}:){2}(((:[0-9A-Fa-f]{1,4}){1,5})|((:[0-9A-Fa-f]{1,4}){0,3}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(([0-9A-Fa-f]{1,4}:){1}(((:[0-9A-Fa-f]{1,4}){1,6})|((:[0-9A-Fa-f]{1,4}){0,4}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:))|(:(((:[0-9A-Fa-f]{1,4}){1,7})|((:[0-9A-Fa-f]{1,4}){0,5}:((25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}))|:)))(%.+)?\s*$))`
	PeerAddress *string `json:"peerAddress,omitempty"`

	// PeerASN is the neighbour's AS number (32-bit ASNs allowed).
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4294967295
	PeerASN *int64 `json:"peerASN,omitempty"`

	// AutoDiscovery finds the peer's address on each node instead of
	// peerAddress (Cilium's cilium.io/v2 field).
	//
	// +kubebuilder:validation:Optional
	AutoDiscovery *BGPAutoDiscovery `json:"autoDiscovery,omitempty"`

	// PeerInterface names the node's interface toward a peer whose
	// peerAddress is IPv6 link-local (fe80::/64, the only link-local
	// prefix RFC 4291 defines, written with fe80: or FE80:, as the
	// schema checks with a rule cheap enough for any list size): the
	// session runs to
	// that address over that interface (a Herald extension: Cilium's
	// schema has no such field). For a peer with no address at all, use
	// autoDiscovery mode Unnumbered.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	PeerInterface *string `json:"peerInterface,omitempty"`

	// PeerConfigRef names the CiliumBGPPeerConfig with the session's
	// transport, timers, authentication and families; without one the
	// defaults apply.
	//
	// +kubebuilder:validation:Optional
	PeerConfigRef *PeerConfigReference `json:"peerConfigRef,omitempty"`
}

// BGPAutoDiscoveryMode is how a peer's address is found.
//
// +kubebuilder:validation:Enum=DefaultGateway;Unnumbered
type BGPAutoDiscoveryMode string

const (
	// BGPDefaultGatewayMode: the peer is the gateway of the node's default
	// route of an address family, followed as the route changes.
	BGPDefaultGatewayMode BGPAutoDiscoveryMode = "DefaultGateway"
	// BGPUnnumberedMode: BGP unnumbered. The peer is the one IPv6
	// link-local neighbour of an interface, learned by Neighbor Discovery
	// (the peer's Router Advertisements); the interface is named
	// (unnumbered) or is the one a default route leaves by
	// (defaultGateway).
	BGPUnnumberedMode BGPAutoDiscoveryMode = "Unnumbered"
)

// BGPAutoDiscovery says how to find a peer's address on each node.
//
// +kubebuilder:validation:XValidation:rule="self.mode != 'DefaultGateway' || has(self.defaultGateway)",message="defaultGateway must be set when mode is DefaultGateway"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Unnumbered' || (has(self.unnumbered) != has(self.defaultGateway))",message="exactly one of unnumbered or defaultGateway must be set when mode is Unnumbered"
type BGPAutoDiscovery struct {
	// Mode is how the address is found.
	//
	// +kubebuilder:validation:Required
	Mode BGPAutoDiscoveryMode `json:"mode"`

	// DefaultGateway configures mode DefaultGateway (the route's gateway
	// is the peer) and may configure mode Unnumbered (only the interface
	// the route leaves by is taken; a Herald extension, Cilium's mode
	// Unnumbered takes unnumbered only).
	//
	// +kubebuilder:validation:Optional
	DefaultGateway *DefaultGateway `json:"defaultGateway,omitempty"`

	// Unnumbered names the interface of mode Unnumbered.
	//
	// +kubebuilder:validation:Optional
	Unnumbered *BGPUnnumbered `json:"unnumbered,omitempty"`
}

// DefaultGateway names the address family whose default route gives the
// peer's address (mode DefaultGateway) or interface (mode Unnumbered).
type DefaultGateway struct {
	// AddressFamily is ipv4 or ipv6. With several default routes of the
	// family, the one with the lowest metric counts. With mode Unnumbered
	// it only says which default route to follow: the session itself is
	// always IPv6 link-local.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum=ipv4;ipv6
	AddressFamily string `json:"addressFamily"`
}

// BGPUnnumbered names the interface of a BGP unnumbered peer.
type BGPUnnumbered struct {
	// Interface is the node's interface toward the peer, a point-to-point
	// link: the peer is its only IPv6 link-local neighbour.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Interface string `json:"interface"`
}

// PeerConfigReference points at a peer configuration, in practice a
// CiliumBGPPeerConfig.
type PeerConfigReference struct {
	// Group of the referenced object.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:default="cilium.io"
	Group string `json:"group"`

	// Kind of the referenced object.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:default="CiliumBGPPeerConfig"
	Kind string `json:"kind"`

	// Name of the referenced object.
	//
	// +kubebuilder:validation:Required
	Name string `json:"name"`
}

// CiliumBGPClusterConfigStatus holds the configuration's conditions.
type CiliumBGPClusterConfigStatus struct {
	// Conditions: cilium.io/NoMatchingNode, cilium.io/MissingPeerConfigs and
	// cilium.io/ConflictingClusterConfig.
	//
	// +kubebuilder:validation:Optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of CiliumBGPClusterConfig.
const (
	// BGPClusterConfigConditionNoMatchingNode is true when the node selector
	// selects no node.
	BGPClusterConfigConditionNoMatchingNode = "cilium.io/NoMatchingNode"
	// BGPClusterConfigConditionMissingPeerConfigs is true when a peer refers
	// to a CiliumBGPPeerConfig that does not exist.
	BGPClusterConfigConditionMissingPeerConfigs = "cilium.io/MissingPeerConfigs"
	// BGPClusterConfigConditionConflictingClusterConfigs is true when another
	// CiliumBGPClusterConfig selects some of the same nodes.
	BGPClusterConfigConditionConflictingClusterConfigs = "cilium.io/ConflictingClusterConfig"
)

// AllBGPClusterConfigConditions lists the condition types above, e.g. for
// removing conditions that no longer apply.
var AllBGPClusterConfigConditions = []string{
	BGPClusterConfigConditionNoMatchingNode,
	BGPClusterConfigConditionMissingPeerConfigs,
	BGPClusterConfigConditionConflictingClusterConfigs,
}
