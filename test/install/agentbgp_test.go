package install

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/heraldlb/herald/install/helm/helmrender"
)

// TestAgentWithChartBGP runs the agent of a BGP-only rendering (L2
// announcements off) under its ServiceAccount: it must derive its BGP
// instances, which wait for every input table, EndpointSlices included
// (a Service without a ready endpoint is withdrawn), and write the node's
// CiliumBGPNodeConfig, without a single "forbidden". The instance has no
// peer and listens on no port: no packet leaves the agent.
func TestAgentWithChartBGP(t *testing.T) {
	c, dyn := setup(t)
	installRBAC(t, c, dyn, bgpRelease...)
	ctx := context.Background()
	const node = "install-bgp-node"

	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node, Labels: map[string]string{"install-bgp": "yes"}},
		Status:     corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "198.18.77.1"}}},
	}
	created, err := c.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	created.Status = n.Status
	if _, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Client.CoreV1().Nodes().Delete(context.Background(), node, metav1.DeleteOptions{}) })

	ccGVR := schema.GroupVersionResource{Group: "cilium.io", Version: "v2alpha1", Resource: "ciliumbgpclusterconfigs"}
	cc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cilium.io/v2alpha1",
		"kind":       "CiliumBGPClusterConfig",
		"metadata":   map[string]any{"name": "install-bgp"},
		"spec": map[string]any{
			"nodeSelector": map[string]any{"matchLabels": map[string]any{"install-bgp": "yes"}},
			"bgpInstances": []any{map[string]any{"name": "main", "localASN": int64(65001)}},
		},
	}}
	if _, err := dyn.Resource(ccGVR).Create(ctx, cc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dyn.Resource(ccGVR).Delete(context.Background(), "install-bgp", metav1.DeleteOptions{}) })

	a := startChartAgent(t, c, render(t, helmrender.Options{Set: bgpRelease}), "herald-bgp", node)
	ncGVR := schema.GroupVersionResource{Group: "cilium.io", Version: "v2alpha1", Resource: "ciliumbgpnodeconfigs"}
	waitAgent(t, a, "the CiliumBGPNodeConfig "+node, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(ncGVR).Get(ctx, node, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	t.Cleanup(func() { _ = dyn.Resource(ncGVR).Delete(context.Background(), node, metav1.DeleteOptions{}) })
	stopAgentLikeKubelet(t, c, a)
	noForbidden(t, a)
}
