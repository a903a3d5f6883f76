package l2config

import (
	"time"

	"github.com/spf13/pflag"
)

// L2Leases are the flags of the L2 announcement Leases' timings: of each
// Service's Lease with the Lease election, of each node's own Lease with the
// members election. Both elections check and apply them (Timings).
type L2Leases struct {
	L2AnnouncementsLeaseDuration time.Duration // l2-announcements-lease-duration
	L2AnnouncementsRenewDeadline time.Duration // l2-announcements-renew-deadline
	L2AnnouncementsRetryPeriod   time.Duration // l2-announcements-retry-period
}

// DefaultL2Leases are the spec's defaults: failover within 10 to 20 seconds.
var DefaultL2Leases = L2Leases{
	L2AnnouncementsLeaseDuration: 15 * time.Second,
	L2AnnouncementsRenewDeadline: 5 * time.Second,
	L2AnnouncementsRetryPeriod:   2 * time.Second,
}

func (def L2Leases) Flags(flags *pflag.FlagSet) {
	flags.Duration("l2-announcements-lease-duration", def.L2AnnouncementsLeaseDuration,
		"Lease election: how long a node must be silent before another takes over its announcements; members election: how long a node's own Lease outlives its last renewal (more than 1s plus twice the retry period, in whole seconds, and more than the renew deadline)")
	flags.Duration("l2-announcements-renew-deadline", def.L2AnnouncementsRenewDeadline,
		"How long the announcing node keeps trying to renew its Lease before giving it up (at least 20% more than the retry period)")
	flags.Duration("l2-announcements-retry-period", def.L2AnnouncementsRetryPeriod,
		"How often nodes retry to acquire or renew a Lease")
}
