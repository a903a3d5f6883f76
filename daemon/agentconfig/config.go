// Package agentconfig holds the agent-wide settings several cells read: who
// this agent is and which features are on. Each field is a flag and a
// ConfigMap key of the same name.
package agentconfig

import (
	"fmt"
	"os"

	"github.com/cilium/hive/cell"
	"github.com/spf13/pflag"
)

// Config is the agent-wide configuration.
type Config struct {
	NodeName     string // node-name
	K8sNamespace string // k8s-namespace

	EnableIPv4 bool // enable-ipv4
	EnableIPv6 bool // enable-ipv6

	EnableL2Announcements bool // enable-l2-announcements
	// L2AnnouncementsElection is how the node that answers for each
	// Service is chosen: "members" (node liveness between the agents,
	// owners placed by consistent hashing) or "lease" (a Lease election
	// per Service). Here because the candidates cell reads it too.
	L2AnnouncementsElection string // l2-announcements-election
	EnableBGPControlPlane   bool   // enable-bgp-control-plane
	// BGPSecretsNamespace holds the Secrets BGP peer configs name for
	// their TCP-MD5 passwords. Here because the k8s-watch cell reflects
	// them.
	BGPSecretsNamespace string // bgp-secrets-namespace

	// EnableL2PodAnnouncements sends a gratuitous ARP for every pod address
	// this node allocates. Here rather than in its cell because the devices
	// cell reads it too: either L2 feature needs the devices table.
	EnableL2PodAnnouncements bool // enable-l2-pod-announcements

	// IPAM is the pod IPAM mode: "multi-pool" runs the pod CIDR allocator
	// and the node IPAM behind the herald-ipam CNI plugin; "none" (the
	// default) leaves pod addresses to another IPAM.
	IPAM string // ipam
}

// L2 election modes (the l2-announcements-election key).
const (
	L2ElectionMembers = "members"
	L2ElectionLease   = "lease"
)

// Pod IPAM modes (the ipam key).
const (
	IPAMNone      = "none"
	IPAMMultiPool = "multi-pool"
)

// MultiPool reports whether multi-pool pod IPAM is on.
func (c Config) MultiPool() bool { return c.IPAM == IPAMMultiPool }

// Validate checks the agent-wide settings.
func (c Config) Validate() error {
	switch c.L2AnnouncementsElection {
	case L2ElectionMembers, L2ElectionLease:
	default:
		return fmt.Errorf("l2-announcements-election: %q is not %q (node liveness, consistent hashing) or %q (a Lease per Service)", c.L2AnnouncementsElection, L2ElectionMembers, L2ElectionLease)
	}
	switch c.IPAM {
	case IPAMNone, IPAMMultiPool:
		return nil
	}
	return fmt.Errorf("ipam: %q is not a mode Herald runs: %q (pod CIDRs from CiliumPodIPPools) or %q", c.IPAM, IPAMMultiPool, IPAMNone)
}

// Defaults follow the spec: IPv4 on, IPv6 and the announcers off.
var Defaults = Config{
	K8sNamespace:        "kube-system",
	EnableIPv4:          true,
	BGPSecretsNamespace: "kube-system",
	IPAM:                IPAMNone,

	L2AnnouncementsElection: L2ElectionMembers,
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("node-name", def.NodeName, "Name of the node this agent runs on (defaults to $NODE_NAME, then the host name)")
	flags.String("k8s-namespace", def.K8sNamespace, "Namespace the agent's Leases live in (the namespace Herald is deployed to)")
	flags.Bool("enable-ipv4", def.EnableIPv4, "Hand out IPv4 LoadBalancer addresses")
	flags.Bool("enable-ipv6", def.EnableIPv6, "Hand out IPv6 LoadBalancer addresses")
	flags.Bool("enable-l2-announcements", def.EnableL2Announcements, "Announce LoadBalancer and external IPs on the local network (ARP/NDP); also makes LB IPAM handle loadBalancerClass io.cilium/l2-announcer")
	flags.String("l2-announcements-election", def.L2AnnouncementsElection, `How the node answering for each Service is chosen: "members" (the agents watch each other's liveness and place Services by consistent hashing; failover under a second, API writes only when owners change) or "lease" (a Lease election per Service)`)
	flags.Bool("enable-bgp-control-plane", def.EnableBGPControlPlane, "Run the BGP control plane: peer with the routers the CiliumBGPClusterConfigs name and advertise what the CiliumBGPAdvertisements select; also makes LB IPAM handle loadBalancerClass io.cilium/bgp-control-plane")
	flags.String("bgp-secrets-namespace", def.BGPSecretsNamespace, "Namespace of the Secrets that CiliumBGPPeerConfig authSecretRef names (TCP-MD5 passwords, key \"password\")")
	flags.Bool("enable-l2-pod-announcements", def.EnableL2PodAnnouncements, "Announce the IPv4 addresses of this node's pods with gratuitous ARP on l2-pod-announcements-interface (with ipam: multi-pool)")
	flags.String("ipam", def.IPAM, `Pod IPAM mode: "multi-pool" (pod CIDRs from CiliumPodIPPools, addresses through the herald-ipam CNI plugin) or "none"`)
}

// Cell registers the agent-wide configuration.
var Cell = cell.Group(
	cell.Config(Defaults),
	cell.Config(DefaultL2Leases),
	// A mode the agent does not run stops it at start, naming the key.
	cell.Invoke(func(c Config) error { return c.Validate() }),
)

// Node returns the node name: --node-name, else $NODE_NAME (set from the
// downward API in the DaemonSet), else the host name.
func (c Config) Node() string {
	if c.NodeName != "" {
		return c.NodeName
	}
	if n := os.Getenv("NODE_NAME"); n != "" {
		return n
	}
	h, _ := os.Hostname()
	return h
}
