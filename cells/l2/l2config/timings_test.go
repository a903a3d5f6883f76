package l2config

import (
	"testing"
	"time"

	"github.com/heraldlb/herald/tables"
)

func TestElectionTimings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags L2Leases
		want  tables.LeaseTimings
	}{{
		name:  "spec defaults: the renew deadline bounds answering",
		flags: DefaultL2Leases,
		want:  tables.LeaseTimings{Duration: 15 * time.Second, RenewDeadline: 5 * time.Second, RetryPeriod: 2 * time.Second},
	}, {
		name:  "short lease: the takeover bound is earlier than the renew deadline",
		flags: L2Leases{L2AnnouncementsLeaseDuration: 2 * time.Second, L2AnnouncementsRenewDeadline: time.Second, L2AnnouncementsRetryPeriod: 200 * time.Millisecond},
		want:  tables.LeaseTimings{Duration: 2 * time.Second, RenewDeadline: 800 * time.Millisecond, RetryPeriod: 200 * time.Millisecond},
	}, {
		name:  "fractional lease duration: the Lease records whole seconds, the others go by them",
		flags: L2Leases{L2AnnouncementsLeaseDuration: 3500 * time.Millisecond, L2AnnouncementsRenewDeadline: 3 * time.Second, L2AnnouncementsRetryPeriod: 500 * time.Millisecond},
		want:  tables.LeaseTimings{Duration: 3 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 500 * time.Millisecond},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.flags.Validate(); err != nil {
				t.Fatalf("the flags must be valid: %v", err)
			}
			if got := tc.flags.Timings(); got != tc.want {
				t.Errorf("Timings(%+v) = %+v, want %+v", tc.flags, got, tc.want)
			}
		})
	}
}
