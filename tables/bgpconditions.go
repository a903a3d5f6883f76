package tables

// Conditions Herald sets on the BGP resources besides Cilium's
// (cilium.io/NoMatchingNode, cilium.io/MissingPeerConfigs,
// cilium.io/ConflictingClusterConfig, cilium.io/MissingAuthSecret).
const (
	// ConditionBGPInvalidSpec is True on a cluster config, peer config or
	// advertisement with a field Herald cannot use (a selector that does
	// not parse, a community, contradicting timers); the message names it.
	ConditionBGPInvalidSpec = "cilium.io/InvalidSpec"
	// ConditionBGPInstancesRunning is True on a CiliumBGPNodeConfig when
	// every instance the node should run runs.
	ConditionBGPInstancesRunning = "cilium.io/InstancesRunning"
	// ConditionBGPPeersEstablished is True on a CiliumBGPNodeConfig when
	// every peer of its instances is configured and its session is
	// established; the message names the others and why.
	ConditionBGPPeersEstablished = "cilium.io/PeersEstablished"
)

// ReasonBGPInvalidSpec is InvalidSpec's one reason, True or False: as
// Cilium's conditions of the cluster and peer configs, each type has a
// reason of its own name.
const ReasonBGPInvalidSpec = "InvalidSpec"

// Reasons of the CiliumBGPNodeConfig's conditions (Herald's; Cilium's
// node config has none).
const (
	ReasonBGPOK             = "OK"
	ReasonBGPNotEstablished = "SessionsNotEstablished"
	ReasonBGPNotConfigured  = "PeersNotConfigured"
	ReasonBGPInstanceErrors = "InstanceErrors"
	// ReasonBFDNotUp: every session is established, but a peer's BFD
	// session is not up, so that peer's failover takes the hold time.
	ReasonBFDNotUp = "BFDNotUp"
	// ReasonBGPNoIPv6NextHop: every session is established, but an IPv4
	// peer with the ipv6-unicast family gets no IPv6 routes: the node has
	// no IPv6 address on the interface toward it to name as next hop.
	ReasonBGPNoIPv6NextHop = "NoIPv6NextHop"
)
