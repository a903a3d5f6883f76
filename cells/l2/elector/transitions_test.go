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
// same holder; a new Lease starts at 0.
func TestTransitionsTo(t *testing.T) {
	for _, tt := range []struct {
		name   string
		rec    holding
		holder string
		want   int32
	}{
		{name: "new Lease", holder: "node1", want: 0},
		{name: "same holder, new term", rec: holding{holder: "node1", term: "t1", version: "7", transitions: 2}, holder: "node1", want: 2},
		{name: "handover", rec: holding{holder: "node1", version: "7", transitions: 2}, holder: "node2", want: 3},
		{name: "release", rec: holding{holder: "node1", version: "7", transitions: 2}, holder: "", want: 2},
		{name: "taken after a release", rec: holding{version: "8", transitions: 2}, holder: "node2", want: 3},
	} {
		if got := tt.rec.transitionsTo(tt.holder); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestWriteRecordTransitions(t *testing.T) {
	leases := fake.NewClientset().CoordinationV1().Leases("kube-system")
	w := write{group: "cilium-l2announce-default-deathstar", holder: "node2", term: "t1", transitions: 3}
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
}
