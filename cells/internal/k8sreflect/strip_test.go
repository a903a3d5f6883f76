package k8sreflect

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The reflector store's copy loses the managed fields' field sets and kubectl's
// last-applied annotation, and keeps everything a row is made of: which
// manager wrote which subresource, the other annotations.
func TestStripUnused(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{
		Name: "web",
		Annotations: map[string]string{
			lastApplied:                    `{"kind":"Service"}`,
			"lbipam.cilium.io/ips":         "198.18.0.10",
			"lbipam.cilium.io/sharing-key": "k",
		},
		ManagedFields: []metav1.ManagedFieldsEntry{
			{Manager: "herald", Subresource: "status", Operation: metav1.ManagedFieldsOperationApply,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}},
			{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}},
		},
	}}
	out, err := stripUnused(svc)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Service)
	if _, ok := got.Annotations[lastApplied]; ok {
		t.Error("the last-applied annotation is still there")
	}
	if len(got.Annotations) != 2 || got.Annotations["lbipam.cilium.io/ips"] != "198.18.0.10" {
		t.Errorf("annotations %v, want the two of LB IPAM", got.Annotations)
	}
	if len(got.ManagedFields) != 2 {
		t.Fatalf("%d managed fields entries, want 2", len(got.ManagedFields))
	}
	for _, mf := range got.ManagedFields {
		if mf.FieldsV1 != nil {
			t.Errorf("%s: field set kept", mf.Manager)
		}
	}
	if mf := got.ManagedFields[0]; mf.Manager != "herald" || mf.Subresource != "status" {
		t.Errorf("first entry %+v, want herald's on status", mf)
	}
	// Objects without metadata pass through.
	if o, err := stripUnused("not an object"); err != nil || o != "not an object" {
		t.Errorf("stripUnused(string) = %v, %v", o, err)
	}
}
