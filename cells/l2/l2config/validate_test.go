package l2config

import (
	"strings"
	"testing"
	"time"
)

func TestL2LeasesValidate(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		d, r, p time.Duration
		wantErr string
	}{
		{15 * time.Second, 5 * time.Second, 2 * time.Second, ""},
		{3 * time.Second, time.Second, 200 * ms, ""},
		{2 * time.Second, time.Second, 200 * ms, ""},
		{time.Second, 500 * ms, 100 * ms, "must be greater than 1s"},
		{1500 * ms, 500 * ms, 100 * ms, "plus twice l2-announcements-retry-period"},
		{5 * time.Second, 5 * time.Second, time.Second, "must be larger than l2-announcements-renew-deadline"},
		{5 * time.Second, time.Second, 900 * ms, "by at least 20%"},
		{5 * time.Second, time.Second, 0, "retry-period (0s) must be at least 1ns"},
	}
	for _, tt := range tests {
		err := L2Leases{L2AnnouncementsLeaseDuration: tt.d, L2AnnouncementsRenewDeadline: tt.r, L2AnnouncementsRetryPeriod: tt.p}.Validate()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s/%s/%s: %v, want %q", tt.d, tt.r, tt.p, err, tt.wantErr)
		}
	}
}
