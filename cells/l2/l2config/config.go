// Package l2config holds the settings of L2 announcements that more than
// one of its cells reads: the switch, the election mode, the Lease timings
// and the fencing contract they make (cells/l2 registers them). The cells'
// own settings are in their own Config.
package l2config

import (
	"fmt"

	"github.com/spf13/pflag"
)

// Config turns L2 announcements on and chooses the election.
type Config struct {
	EnableL2Announcements bool // enable-l2-announcements
	// L2AnnouncementsElection is how the node that answers for each
	// Service is chosen: "members" (node liveness between the agents,
	// owners placed by consistent hashing) or "lease" (a Lease election
	// per Service).
	L2AnnouncementsElection string // l2-announcements-election
}

// Election modes (the l2-announcements-election key).
const (
	ElectionMembers = "members"
	ElectionLease   = "lease"
)

// Defaults: off, as in the spec; the members election.
var Defaults = Config{L2AnnouncementsElection: ElectionMembers}

// Runs reports whether the election of this mode runs.
func (c Config) Runs(mode string) bool {
	return c.EnableL2Announcements && c.L2AnnouncementsElection == mode
}

// Validate stops the agent at start on a mode it does not run, whether L2
// announcements are on or not.
func (c Config) Validate() error {
	switch c.L2AnnouncementsElection {
	case ElectionMembers, ElectionLease:
		return nil
	}
	return fmt.Errorf("l2-announcements-election: %q is not %q (node liveness, consistent hashing) or %q (a Lease per Service)", c.L2AnnouncementsElection, ElectionMembers, ElectionLease)
}

func (def Config) Flags(flags *pflag.FlagSet) {
	flags.Bool("enable-l2-announcements", def.EnableL2Announcements, "Announce LoadBalancer and external IPs on the local network (ARP/NDP); also makes LB IPAM handle loadBalancerClass io.cilium/l2-announcer")
	flags.String("l2-announcements-election", def.L2AnnouncementsElection, `How the node answering for each Service is chosen: "members" (the agents watch each other's liveness and place Services by consistent hashing; failover under a second, API writes only when owners change) or "lease" (a Lease election per Service)`)
}
