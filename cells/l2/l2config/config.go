// Package l2config is the switch of L2 announcements, which every cell of
// the feature reads (cells/l2 registers it). The cells' own settings are
// in their own Config.
package l2config

import "github.com/spf13/pflag"

// Config turns L2 announcements on.
type Config struct {
	EnableL2Announcements bool // enable-l2-announcements
}

// Defaults: off, as in the spec.
var Defaults = Config{}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.Bool("enable-l2-announcements", def.EnableL2Announcements, "Announce LoadBalancer and external IPs on the local network (ARP/NDP); also makes LB IPAM handle loadBalancerClass io.cilium/l2-announcer")
}
