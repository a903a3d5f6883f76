package l2config

import (
	"fmt"
	"time"

	"github.com/heraldlb/herald/tables"
)

// Timings are the timings of every announcement Lease election,
// derived from the flags. They are the feature's fencing contract: a node
// answers for a Lease's IPs only until RenewDeadline after it *sent* its
// last successful renewal (a renewal whose answer is read late, after a
// freeze, counts from when it was sent, so it may already have expired).
// That deadline is the earlier of
//   - the renew deadline, the spec's "how long the node keeps trying to
//     renew before giving up", and
//   - the lease duration as the Lease records it (whole seconds), minus a
//     second for that rounding and a retry period of margin: the others
//     take the Lease over a lease duration after they saw its last renewal,
//     which is after it was sent.
func (l L2Leases) Timings() tables.LeaseTimings {
	duration := l.L2AnnouncementsLeaseDuration.Truncate(LeaseTimeResolution)
	fresh := duration - LeaseTimeResolution - l.L2AnnouncementsRetryPeriod
	return tables.LeaseTimings{
		Duration:      duration,
		RenewDeadline: min(l.L2AnnouncementsRenewDeadline, fresh),
		RetryPeriod:   l.L2AnnouncementsRetryPeriod,
	}
}

// LeaseTimeResolution is the precision of the times in a Lease as nodes
// compare them: a follower may see a renewal up to this much late.
const LeaseTimeResolution = time.Second

// EffectiveDuration is the lease duration as the Lease records it, in whole
// seconds (leaseDurationSeconds): what other nodes go by.
func (c L2Leases) EffectiveDuration() time.Duration {
	return c.L2AnnouncementsLeaseDuration.Truncate(time.Second)
}

// Validate applies the spec's rules, and one more: the lease duration must
// exceed 1s plus two retry periods, so that a holder's renewals (one per
// retry period) stay within what a node may trust (Timings).
// Shorter leases were measured to let two nodes answer for the same IP
// during handovers.
func (c L2Leases) Validate() error {
	d, r, p := c.L2AnnouncementsLeaseDuration, c.L2AnnouncementsRenewDeadline, c.L2AnnouncementsRetryPeriod
	switch {
	case d <= time.Second:
		return fmt.Errorf("l2-announcements-lease-duration (%s) must be greater than 1s", d)
	case c.EffectiveDuration() <= LeaseTimeResolution+2*p:
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

// EchoInterval is how often, in the members election, a node asks a peer
// to confirm it (cells/l2/members), and so how often the elector
// (cells/l2/elector) judges its standing again when nothing else wakes it:
// a confirmation lapses between two echoes at the earliest.
const EchoInterval = 50 * time.Millisecond

// The witness record of a two-node cluster (cells/l2/elector, witness.go):
// each node renews its own Lease herald-l2-witness-<node> every
// WitnessRenewInterval while it knows of at most one other node; it may
// answer on its strength until WitnessAnswerFor after it *sent* its last
// successful renewal; the other node may take its groups once it has seen
// the record unchanged for WitnessExpiry, on its own clock. The reader
// first sees a renewal after it was sent, so it acts at least
// WitnessExpiry - WitnessAnswerFor after the writer fell silent.
const (
	WitnessRenewInterval = 250 * time.Millisecond
	WitnessAnswerFor     = 750 * time.Millisecond
	WitnessExpiry        = time.Second
)
