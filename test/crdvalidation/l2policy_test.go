package crdvalidation

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestL2PolicyWithoutSpec: a CiliumL2AnnouncementPolicy without spec is
// accepted, as Cilium's CRD accepts it (it announces nothing), and reads
// back with no selector and nothing to announce.
func TestL2PolicyWithoutSpec(t *testing.T) {
	ctx := context.Background()
	body := []byte(`{"apiVersion":"cilium.io/v2alpha1","kind":"CiliumL2AnnouncementPolicy","metadata":{"name":"no-spec"}}`)
	if err := clientset.CiliumV2alpha1().RESTClient().Post().Resource("ciliuml2announcementpolicies").
		Body(body).Do(ctx).Error(); err != nil {
		t.Fatalf("a policy without spec was refused: %v", err)
	}
	t.Cleanup(func() {
		_ = clientset.CiliumV2alpha1().CiliumL2AnnouncementPolicies().Delete(context.Background(), "no-spec", metav1.DeleteOptions{})
	})
	got, err := clientset.CiliumV2alpha1().CiliumL2AnnouncementPolicies().Get(ctx, "no-spec", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := got.Spec; s.ServiceSelector != nil || s.NodeSelector != nil || s.LoadBalancerIPs || s.ExternalIPs || len(s.Interfaces) != 0 {
		t.Fatalf("spec read back as %+v, want nothing selected and nothing to announce", s)
	}
}
