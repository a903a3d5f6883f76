package lease

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NodeOwner is the owner reference that makes a Lease of one node follow
// its Node: when the Node is deleted, the Kubernetes garbage collector
// deletes the Lease, as it deletes the kubelet's Lease in kube-node-lease.
// Without a Node of that name (an agent started before its Node
// registered), it returns none: the Lease is created without an owner
// and stays until deleted by hand.
func NodeOwner(ctx context.Context, kube kubernetes.Interface, node string) ([]metav1.OwnerReference, error) {
	n, err := kube.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return []metav1.OwnerReference{{
		APIVersion: corev1.SchemeGroupVersion.String(),
		Kind:       "Node",
		Name:       n.Name,
		UID:        n.UID,
	}}, nil
}
