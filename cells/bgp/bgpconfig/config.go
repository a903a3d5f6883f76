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
}

// Defaults: off; the Secrets in kube-system.
var Defaults = Config{BGPSecretsNamespace: "kube-system"}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.Bool("enable-bgp-control-plane", def.EnableBGPControlPlane, "Run the BGP control plane: peer with the routers the CiliumBGPClusterConfigs name and advertise what the CiliumBGPAdvertisements select; also makes LB IPAM handle loadBalancerClass io.cilium/bgp-control-plane")
	flags.String("bgp-secrets-namespace", def.BGPSecretsNamespace, "Namespace of the Secrets that CiliumBGPPeerConfig authSecretRef names (TCP-MD5 passwords, key \"password\")")
}
