// Package bgpconfig is the configuration every cell of the BGP control
// plane reads (cells/bgp registers it).
package bgpconfig

import "github.com/spf13/pflag"

// Config of the BGP control plane.
type Config struct {
	EnableBGPControlPlane bool // enable-bgp-control-plane
	// BGPSecretsNamespace holds the Secrets BGP peer configs name for
	// their TCP-MD5 passwords.
	BGPSecretsNamespace string // bgp-secrets-namespace
	// EnableBGPControlPlaneStatusReport writes the status of the
	// CiliumBGPNodeConfigs and the conditions of the cluster configs,
	// peer configs and advertisements. Off, as in Cilium, they are
	// cleared and no longer written (the node configs' spec still is): a
	// large cluster saves the writes.
	EnableBGPControlPlaneStatusReport bool // enable-bgp-control-plane-status-report
}

// Defaults: off; the Secrets in kube-system; status reported (Cilium's
// defaults).
var Defaults = Config{BGPSecretsNamespace: "kube-system", EnableBGPControlPlaneStatusReport: true}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.Bool("enable-bgp-control-plane", def.EnableBGPControlPlane, "Run the BGP control plane: peer with the routers the CiliumBGPClusterConfigs name and advertise what the CiliumBGPAdvertisements select; also makes LB IPAM handle loadBalancerClass io.cilium/bgp-control-plane")
	flags.String("bgp-secrets-namespace", def.BGPSecretsNamespace, "Namespace of the Secrets that CiliumBGPPeerConfig authSecretRef names (TCP-MD5 passwords, key \"password\")")
	flags.Bool("enable-bgp-control-plane-status-report", def.EnableBGPControlPlaneStatusReport,
		"Write the status of CiliumBGPNodeConfigs (sessions) and the conditions of the other BGP resources; false clears them and stops writing them")
}
