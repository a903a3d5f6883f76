package lease

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A Lease of one node is created owned by its Node (if the Node exists),
// so that it goes with the Node; a Node not registered yet gives a Lease
// without an owner rather than no Lease.
func TestCreateOwnedByNode(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node1", UID: "uid-1"}})
	leases := kube.CoordinationV1().Leases("kube-system")
	for _, c := range []struct {
		node string
		want []metav1.OwnerReference
	}{
		{"node1", []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node1", UID: "uid-1"}}},
		{"node2", nil},
	} {
		name := "herald-l2-node-" + c.node
		k := NewKube(leases, name).OwnedBy(func(ctx context.Context) ([]metav1.OwnerReference, error) {
			return NodeOwner(ctx, kube, c.node)
		})
		if _, err := k.Create(ctx, Record{Holder: c.node, Duration: 15 * time.Second}); err != nil {
			t.Fatal(err)
		}
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !equalOwners(l, c.want) {
			t.Errorf("Lease %s: owners %+v, want %+v", name, l.OwnerReferences, c.want)
		}
	}
}

func equalOwners(l *coordinationv1.Lease, want []metav1.OwnerReference) bool {
	if len(l.OwnerReferences) != len(want) {
		return false
	}
	for i := range want {
		if l.OwnerReferences[i] != want[i] {
			return false
		}
	}
	return true
}
