// Package agentconfig is the ground floor's configuration: who this agent is
// (its node, the namespace it is deployed to), the IP families the
// cluster runs, and which pod IPAM hands out pod addresses. Every feature
// may read it; a feature's own switches and settings live in its folder.
// Each field is a flag and a ConfigMap key of the same name.
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

	// IPAM is the pod IPAM mode: "multi-pool" runs the pod CIDR allocator
	// and the node IPAM behind the herald-ipam CNI plugin; "none" (the
	// default) leaves pod addresses to another IPAM. Agent-wide because
	// BGP (pod CIDRs to advertise) and L2 pod announcements depend on it.
	IPAM string // ipam

	// EnableNoServiceEndpointsRoutable keeps announcing (L2) and
	// advertising (BGP) a Service that has no ready endpoint anywhere, as
	// Herald did before it withdrew such Services. Cilium's name; Herald's
	// default is false (withdraw), Cilium's true. Agent-wide because L2
	// and BGP both honour it.
	EnableNoServiceEndpointsRoutable bool // enable-no-service-endpoints-routable
}

// Pod IPAM modes (the ipam key).
const (
	IPAMNone      = "none"
	IPAMMultiPool = "multi-pool"
)

// MultiPool reports whether multi-pool pod IPAM is on.
func (c Config) MultiPool() bool { return c.IPAM == IPAMMultiPool }

// Validate checks the agent-wide settings.
func (c Config) Validate() error {
	switch c.IPAM {
	case IPAMNone, IPAMMultiPool:
		return nil
	}
	return fmt.Errorf("ipam: %q is not a mode Herald runs: %q (pod CIDRs from CiliumPodIPPools) or %q", c.IPAM, IPAMMultiPool, IPAMNone)
}

// Defaults follow the spec: IPv4 on, IPv6 off, no pod IPAM.
var Defaults = Config{
	K8sNamespace: "kube-system",
	EnableIPv4:   true,
	IPAM:         IPAMNone,
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.String("node-name", def.NodeName, "Name of the node this agent runs on (defaults to $NODE_NAME, then the host name)")
	flags.String("k8s-namespace", def.K8sNamespace, "Namespace the agent's Leases live in (the namespace Herald is deployed to)")
	flags.Bool("enable-ipv4", def.EnableIPv4, "Hand out IPv4 LoadBalancer addresses")
	flags.Bool("enable-ipv6", def.EnableIPv6, "Hand out IPv6 LoadBalancer addresses")
	flags.Bool("enable-no-service-endpoints-routable", def.EnableNoServiceEndpointsRoutable,
		"Keep announcing (L2) and advertising (BGP) a Service with no ready endpoint; false withdraws it until an endpoint is ready")
	flags.String("ipam", def.IPAM, `Pod IPAM mode: "multi-pool" (pod CIDRs from CiliumPodIPPools, addresses through the herald-ipam CNI plugin) or "none"`)
}

// Cell registers the agent-wide configuration.
var Cell = cell.Group(
	cell.Config(Defaults),
	// A mode the agent does not run stops it at start, naming the key.
	cell.Invoke(func(c Config) error { return c.Validate() }),
	// Cilium's datapath options that the spec's ConfigMap sets.
	ciliumDatapathCell,
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
