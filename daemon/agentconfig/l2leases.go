package agentconfig

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"
)

// L2Leases are the timings of the L2 announcement Leases. Two cells read
// them: the announcer elects with them, and the responder stops answering
// when the agent has not refreshed its heartbeat for a lease duration.
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
		"How long a node must be silent before another takes over its announcements (more than 1s plus twice the retry period, in whole seconds, and more than the renew deadline)")
	flags.Duration("l2-announcements-renew-deadline", def.L2AnnouncementsRenewDeadline,
		"How long the announcing node keeps trying to renew its Lease before giving it up (at least 20% more than the retry period)")
	flags.Duration("l2-announcements-retry-period", def.L2AnnouncementsRetryPeriod,
		"How often nodes retry to acquire or renew a Lease")
}

// LeaseTimeResolution is the precision of the times in a Lease as nodes
// compare them: a follower may see a renewal up to this much late.
const LeaseTimeResolution = time.Second

// effectiveDuration is the lease duration as the Lease records it, in whole
// seconds (leaseDurationSeconds): what other nodes go by.
func (c L2Leases) effectiveDuration() time.Duration {
	return c.L2AnnouncementsLeaseDuration.Truncate(time.Second)
}

// Validate applies the spec's rules, and one more: the lease duration must
// exceed 1s plus two retry periods, so that a holder's renewals (one per
// retry period) stay within what a node may trust (see the l2-announcer
// cell). Shorter leases were measured to let two nodes answer for the same
// IP during handovers.
func (c L2Leases) Validate() error {
	d, r, p := c.L2AnnouncementsLeaseDuration, c.L2AnnouncementsRenewDeadline, c.L2AnnouncementsRetryPeriod
	switch {
	case d <= time.Second:
		return fmt.Errorf("l2-announcements-lease-duration (%s) must be greater than 1s", d)
	case c.effectiveDuration() <= LeaseTimeResolution+2*p:
		return fmt.Errorf("l2-announcements-lease-duration (%s) must be greater than 1s plus twice l2-announcements-retry-period (%s), in whole seconds: Leases record time in whole seconds", d, p)
	case d <= r:
		return fmt.Errorf("l2-announcements-lease-duration (%s) must be larger than l2-announcements-renew-deadline (%s)", d, r)
	case p < time.Nanosecond:
		return fmt.Errorf("l2-announcements-retry-period (%s) must be at least 1ns", p)
	case r < time.Nanosecond:
		return fmt.Errorf("l2-announcements-renew-deadline (%s) must be at least 1ns", r)
	case float64(r) <= 1.2*float64(p):
		return fmt.Errorf("l2-announcements-renew-deadline (%s) must be larger than l2-announcements-retry-period (%s) by at least 20%%", r, p)
	}
	return nil
}
