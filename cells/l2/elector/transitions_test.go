package elector

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The Lease of a group counts how often it changed hands, as the spec
// says leaseTransitions does and as the Lease election counts: one more
// whenever another node takes it, none for a release or a new term of the
// same holder; a new Lease starts at 0. Its acquireTime stays while the
// same node holds it, a new term too (as client-go keeps it when the same
// identity renews), and is the time of the write otherwise (zero here).
func TestHandedTo(t *testing.T) {
	t0 := time.Unix(1000, 0)
	for _, tt := range []struct {
		name     string
		rec      holding
		holder   string
		want     int32
		acquired time.Time
	}{
		{name: "new Lease", holder: "node1", want: 0},
		{name: "same holder, new term", rec: holding{holder: "node1", term: "t1", version: "7", transitions: 2, acquired: t0}, holder: "node1", want: 2, acquired: t0},
		{name: "handover", rec: holding{holder: "node1", version: "7", transitions: 2, acquired: t0}, holder: "node2", want: 3},
		{name: "release", rec: holding{holder: "node1", version: "7", transitions: 2, acquired: t0}, holder: "", want: 2},
		{name: "taken after a release", rec: holding{version: "8", transitions: 2, acquired: t0}, holder: "node2", want: 3},
	} {
		got, acquired := tt.rec.handedTo(tt.holder)
		if got != tt.want || !acquired.Equal(tt.acquired) {
			t.Errorf("%s: %d %v, want %d %v", tt.name, got, acquired, tt.want, tt.acquired)
		}
	}
}

func TestWriteRecordTransitions(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1().Leases("kube-system")
	acquired := time.Now().Add(-time.Hour).Truncate(time.Microsecond)
	w := write{group: "cilium-l2announce-default-deathstar", holder: "node2", term: "t1", transitions: 3, acquired: acquired}
	if _, err := writeRecord(context.Background(), leases, w, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	l, err := leases.Get(context.Background(), w.group, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.LeaseTransitions == nil || *l.Spec.LeaseTransitions != 3 {
		t.Errorf("leaseTransitions %v, want 3", l.Spec.LeaseTransitions)
	}
	if l.Spec.AcquireTime == nil || !l.Spec.AcquireTime.Time.Equal(acquired) {
		t.Errorf("acquireTime %v, want %v", l.Spec.AcquireTime, acquired)
	}
}
