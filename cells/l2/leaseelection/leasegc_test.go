package leaseelection

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestAbandoned(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(holder string, renewedAgo time.Duration) *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		if holder != "" {
			l.Spec.HolderIdentity = ptr.To(holder)
		}
		l.Spec.RenewTime = &metav1.MicroTime{Time: now.Add(-renewedAgo)}
		return l
	}
	tests := []struct {
		name string
		l    *coordinationv1.Lease
		want bool
	}{
		{"held and fresh", lease("node1", 2*time.Second), false},
		{"held, holder silent for 2 minutes", lease("node1", 2*time.Minute), false},
		{"held, holder silent for 3 minutes", lease("node1", 3*time.Minute), true},
		{"released just now", lease("", 5*time.Second), false},
		{"released 31s ago", lease("", 31*time.Second), true},
	}
	for _, tt := range tests {
		if got := abandoned(tt.l, 15*time.Second, now); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
