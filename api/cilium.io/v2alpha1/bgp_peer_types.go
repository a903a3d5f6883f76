package v2alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of a BGP session, as the API server fills them in (the schema
// defaults below) and as the agent assumes for a peer without a
// CiliumBGPPeerConfig.
const (
	// DefaultBGPPeerLocalPort: 0 lets the kernel pick the source port.
	DefaultBGPPeerLocalPort = 0
	// DefaultBGPPeerPort is the TCP port of BGP.
	DefaultBGPPeerPort = 179
	// DefaultBGPEBGPMultihopTTL is the TTL of packets to eBGP peers: directly
	// connected.
	DefaultBGPEBGPMultihopTTL = 1
	// DefaultBGPConnectRetryTimeSeconds is the ConnectRetryTimer (RFC 4271).
	DefaultBGPConnectRetryTimeSeconds = 120
	// DefaultBGPHoldTimeSeconds is the HoldTimer (RFC 4271).
	DefaultBGPHoldTimeSeconds = 90
	// DefaultBGPKeepAliveTimeSeconds is the KeepaliveTimer (RFC 4271).
	DefaultBGPKeepAliveTimeSeconds = 30
	// DefaultBGPGRRestartTimeSeconds is the graceful restart time (RFC 4724).
	DefaultBGPGRRestartTimeSeconds = 120
)

// The address families Herald's BGP control plane advertises: AFI ipv4 or
// ipv6, SAFI unicast. The schema accepts every AFI and SAFI Cilium's does.
const (
	BGPAfiIPv4     = "ipv4"
	BGPAfiIPv6     = "ipv6"
	BGPSafiUnicast = "unicast"
)

// CiliumBGPPeerConfig holds the session settings that peers of a
// CiliumBGPClusterConfig share by naming it in peerConfigRef.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories={cilium,ciliumbgp},singular="ciliumbgppeerconfig",path="ciliumbgppeerconfigs",scope="Cluster",shortName={cbgppeer}
// +kubebuilder:printcolumn:JSONPath=".metadata.creationTimestamp",name="Age",type=date
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
type CiliumBGPPeerConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Spec holds the session settings.
	//
	// +kubebuilder:validation:Required
	Spec CiliumBGPPeerConfigSpec `json:"spec"`

	// Status reports problems found with this configuration.
	//
	// +kubebuilder:validation:Optional
	Status CiliumBGPPeerConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CiliumBGPPeerConfigList is a list of CiliumBGPPeerConfig objects.
type CiliumBGPPeerConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`

	// Items is the list of peer configurations.
	Items []CiliumBGPPeerConfig `json:"items"`
}

// CiliumBGPPeerConfigSpec is the settings of a BGP session. Every field is
// optional; an unset one takes the default above.
type CiliumBGPPeerConfigSpec struct {
	// Transport holds the TCP ports of the session.
	//
	// +kubebuilder:validation:Optional
	Transport *CiliumBGPTransport `json:"transport,omitempty"`

	// Timers holds the session's BGP timers.
	//
	// +kubebuilder:validation:Optional
	Timers *CiliumBGPTimers `json:"timers,omitempty"`

	// AuthSecretRef names a Secret in the BGP secrets namespace whose key
	// "password" is the TCP MD5 password of the session; unset means no
	// authentication.
	//
	// +kubebuilder:validation:Optional
	AuthSecretRef *string `json:"authSecretRef,omitempty"`

	// GracefulRestart turns on the graceful restart capability (RFC 4724);
	// unset means off.
	//
	// +kubebuilder:validation:Optional
	GracefulRestart *CiliumBGPNeighborGracefulRestart `json:"gracefulRestart,omitempty"`

	// EBGPMultihop is the TTL of packets to an eBGP peer, for peers more than
	// one hop away; ignored for iBGP peers.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	// +kubebuilder:default=1
	EBGPMultihop *int32 `json:"ebgpMultihop,omitempty"`

	// Families are the AFI/SAFIs negotiated with the peer, each with the
	// CiliumBGPAdvertisements it announces; unset means ipv6/unicast and
	// ipv4/unicast with no advertisements.
	//
	// +kubebuilder:validation:Optional
	Families []CiliumBGPFamilyWithAdverts `json:"families,omitempty"`

	// BFD runs Bidirectional Forwarding Detection (RFC 5880, single hop:
	// RFC 5881) with the peer: when BFD declares the path down, the BGP
	// session is reset at once instead of waiting for the hold time. A
	// Herald extension: Cilium OSS has no BFD; the fields follow the BFD
	// profiles of Isovalent's and MetalLB's APIs. Unset means no BFD.
	//
	// +kubebuilder:validation:Optional
	BFD *CiliumBGPBFD `json:"bfd,omitempty"`
}

// Defaults of a BFD session, as in MetalLB's and FRR's BFD profiles.
const (
	DefaultBFDIntervalMilliseconds = 300
	DefaultBFDDetectMultiplier     = 3
)

// CiliumBGPBFD is the BFD session with a peer (asynchronous mode; no echo
// function, no authentication).
type CiliumBGPBFD struct {
	// ReceiveIntervalMilliseconds is bfd.RequiredMinRxInterval: the
	// shortest interval between received control packets this node
	// accepts.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=60000
	// +kubebuilder:default=300
	ReceiveIntervalMilliseconds *int32 `json:"receiveIntervalMilliseconds,omitempty"`

	// TransmitIntervalMilliseconds is bfd.DesiredMinTxInterval: the
	// interval this node would like to send control packets at (less
	// jitter) while the session is up; the peer may ask for a longer one.
	// While the session is not up, packets go once a second.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=60000
	// +kubebuilder:default=300
	TransmitIntervalMilliseconds *int32 `json:"transmitIntervalMilliseconds,omitempty"`

	// DetectMultiplier: the peer declares this node down after this many
	// intervals without a packet, each the longer of this node's
	// transmitIntervalMilliseconds and the peer's receive interval.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=255
	// +kubebuilder:default=3
	DetectMultiplier *int32 `json:"detectMultiplier,omitempty"`

	// PassiveMode: send nothing until the peer has sent a packet.
	//
	// +kubebuilder:validation:Optional
	PassiveMode *bool `json:"passiveMode,omitempty"`
}

// CiliumBGPFamily is an address family: an AFI/SAFI pair.
type CiliumBGPFamily struct {
	// Afi is the address family identifier.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum=ipv4;ipv6;l2vpn;ls;opaque
	Afi string `json:"afi"`

	// Safi is the subsequent address family identifier.
	//
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:Enum=unicast;multicast;mpls_label;encapsulation;vpls;evpn;ls;sr_policy;mup;mpls_vpn;mpls_vpn_multicast;route_target_constraints;flowspec_unicast;flowspec_vpn;key_value
	Safi string `json:"safi"`
}

// CiliumBGPFamilyWithAdverts is an address family and what is announced in
// it.
type CiliumBGPFamilyWithAdverts struct {
	CiliumBGPFamily `json:",inline"`

	// Advertisements selects CiliumBGPAdvertisements by their labels; unset
	// means nothing is announced in this family.
	//
	// +kubebuilder:validation:Optional
	Advertisements *metav1.LabelSelector `json:"advertisements,omitempty"`
}

// CiliumBGPTransport holds the TCP ports of a session.
type CiliumBGPTransport struct {
	// LocalPort is the source port of outgoing connections; unset lets the
	// kernel pick one. Deprecated in Cilium.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	LocalPort *int32 `json:"localPort,omitempty"`

	// PeerPort is the peer's BGP port.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=179
	PeerPort *int32 `json:"peerPort,omitempty"`

	// SourceInterface names a local interface whose address, of the
	// peer's family, is the session's source address (Cilium's
	// cilium.io/v2 field). The interface must have one usable address of
	// that family (not loopback, multicast or IPv6 link-local); without
	// the interface or such an address the kernel picks the source, as
	// when unset.
	//
	// +kubebuilder:validation:Optional
	SourceInterface string `json:"sourceInterface,omitempty"`
}

// The keepalive rule is Herald's (Cilium's agent refuses such timers only
// when it configures the session); both fields have defaults, so the rule
// sees them set.
//
// +kubebuilder:validation:XValidation:rule="!has(self.keepAliveTimeSeconds) || !has(self.holdTimeSeconds) || self.keepAliveTimeSeconds <= self.holdTimeSeconds",message="keepAliveTimeSeconds must not be larger than holdTimeSeconds"

// CiliumBGPTimers are the BGP timers of a session (RFC 4271).
type CiliumBGPTimers struct {
	// ConnectRetryTimeSeconds is how long to wait between connection
	// attempts.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483647
	// +kubebuilder:default=120
	ConnectRetryTimeSeconds *int32 `json:"connectRetryTimeSeconds,omitempty"`

	// HoldTimeSeconds is the proposed hold time; changing it resets the
	// session.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=3
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=90
	HoldTimeSeconds *int32 `json:"holdTimeSeconds,omitempty"`

	// KeepAliveTimeSeconds is the interval of keepalive messages, at most
	// holdTimeSeconds; changing it resets the session.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=30
	KeepAliveTimeSeconds *int32 `json:"keepAliveTimeSeconds,omitempty"`
}

// CiliumBGPNeighborGracefulRestart holds the graceful restart settings of a
// session (RFC 4724).
type CiliumBGPNeighborGracefulRestart struct {
	// Enabled turns graceful restart on.
	//
	// +kubebuilder:validation:Required
	Enabled bool `json:"enabled"`

	// RestartTimeSeconds is how long the peer keeps this node's routes after
	// the session drops, waiting for it to come back.
	//
	// +kubebuilder:validation:Optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=4095
	// +kubebuilder:default=120
	RestartTimeSeconds *int32 `json:"restartTimeSeconds,omitempty"`
}

// CiliumBGPPeerConfigStatus holds the configuration's conditions.
type CiliumBGPPeerConfigStatus struct {
	// Conditions: cilium.io/MissingAuthSecret.
	//
	// +kubebuilder:validation:Optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of CiliumBGPPeerConfig.
const (
	// BGPPeerConfigConditionMissingAuthSecret is true when authSecretRef
	// names a Secret that does not exist.
	BGPPeerConfigConditionMissingAuthSecret = "cilium.io/MissingAuthSecret"
)

// AllBGPPeerConfigConditions lists the condition types above.
var AllBGPPeerConfigConditions = []string{
	BGPPeerConfigConditionMissingAuthSecret,
}
