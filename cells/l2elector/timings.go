package l2elector

import (
	"github.com/heraldlb/herald/daemon/agentconfig"
	"github.com/heraldlb/herald/tables"
)

// electionTimings are the timings of every announcement Lease election,
// derived from the flags. They are this cell's fencing contract: a node
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
func electionTimings(l agentconfig.L2Leases) tables.LeaseTimings {
	duration := l.L2AnnouncementsLeaseDuration.Truncate(agentconfig.LeaseTimeResolution)
	fresh := duration - agentconfig.LeaseTimeResolution - l.L2AnnouncementsRetryPeriod
	return tables.LeaseTimings{
		Duration:      duration,
		RenewDeadline: min(l.L2AnnouncementsRenewDeadline, fresh),
		RetryPeriod:   l.L2AnnouncementsRetryPeriod,
	}
}
