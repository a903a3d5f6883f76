package crdvalidation

import (
	"context"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// servedVersions are the versions install/crds serves the pool CRD under:
// v2alpha1, the version of the Go types, and v2, a copy with the same
// schema and the storage version, as in Cilium (hack/crd-versions).
var servedVersions = []string{"v2alpha1", "v2"}

func poolsGVR(version string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: v2alpha1.GroupName, Version: version, Resource: v2alpha1.PoolPlural}
}

// bluePoolV2 is the spec's blue-pool manifest, applied as cilium.io/v2.
const bluePoolV2 = `
apiVersion: "cilium.io/v2"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool-v2"
spec:
  blocks:
  - cidr: "10.0.10.0/24"
  - cidr: "2004::0/64"
  - start: "20.0.20.100"
    stop: "20.0.20.200"
  - start: "1.2.3.4"
`

func TestServedUnderBothVersions(t *testing.T) {
	ctx := context.Background()
	pools := clientset.CiliumV2alpha1().CiliumLoadBalancerIPPools()

	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(bluePoolV2), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(poolsGVR("v2")).Create(ctx, &obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating blue-pool as cilium.io/v2: %v", err)
	}
	t.Cleanup(func() { _ = pools.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}) })

	// Written as v2, read back as v2alpha1 through the generated clientset.
	got, err := pools.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := bluePool
	want.AllowFirstLastIPs = v2alpha1.AllowFirstLastIPYes
	if !reflect.DeepEqual(got.Spec, want) {
		t.Errorf("v2alpha1 spec = %+v, want %+v", got.Spec, want)
	}

	for _, version := range servedVersions {
		u, err := dyn.Resource(poolsGVR(version)).Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get as %s: %v", version, err)
		}
		if av := u.GetAPIVersion(); av != "cilium.io/"+version {
			t.Errorf("apiVersion = %q, want cilium.io/%s", av, version)
		}
		bs, _, _ := unstructured.NestedSlice(u.Object, "spec", "blocks")
		if len(bs) != 4 {
			t.Errorf("%s: %d blocks, want 4", version, len(bs))
		}
	}
}

// TestV2HasTheSameRules runs the rejected cases against cilium.io/v2, whose
// schema is a generated copy of v2alpha1's.
func TestV2HasTheSameRules(t *testing.T) {
	for _, tc := range rejectedCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			p := pool(tc.name, tc.spec)
			p.APIVersion = v2alpha1.GroupName + "/v2"
			p.Kind = v2alpha1.PoolKind
			content, err := toUnstructured(p)
			if err != nil {
				t.Fatal(err)
			}
			_, err = dyn.Resource(poolsGVR("v2")).Create(ctx, content, metav1.CreateOptions{})
			if err == nil {
				_ = dyn.Resource(poolsGVR("v2")).Delete(ctx, tc.name, metav1.DeleteOptions{})
				t.Fatalf("accepted as v2, want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	return &unstructured.Unstructured{Object: m}, err
}

// TestNoV2WhereCiliumServesNone: the L2 policy and the pod IP pool are
// served as v2alpha1 only, as Cilium 1.20 serves them (it has no v2 of the
// policy, and declares the pool's v2 unserved), so a manifest written as
// cilium.io/v2 is refused, as Cilium's API server refuses it.
func TestNoV2WhereCiliumServesNone(t *testing.T) {
	for _, c := range []struct{ plural, kind, spec string }{
		{"ciliuml2announcementpolicies", "CiliumL2AnnouncementPolicy", `{"loadBalancerIPs": true}`},
		{v2alpha1.PodIPPoolPlural, "CiliumPodIPPool", `{"ipv4": {"cidrs": ["10.20.0.0/16"], "maskSize": 24}}`},
	} {
		t.Run(c.plural, func(t *testing.T) {
			ctx := context.Background()
			var obj unstructured.Unstructured
			doc := `{"apiVersion": "cilium.io/v2", "kind": "` + c.kind + `", "metadata": {"name": "as-v2"}, "spec": ` + c.spec + `}`
			if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
				t.Fatal(err)
			}
			v2 := schema.GroupVersionResource{Group: v2alpha1.GroupName, Version: "v2", Resource: c.plural}
			_, err := dyn.Resource(v2).Create(ctx, &obj, metav1.CreateOptions{})
			if err == nil {
				_ = dyn.Resource(v2).Delete(ctx, "as-v2", metav1.DeleteOptions{})
				t.Fatalf("%s accepted as cilium.io/v2", c.kind)
			}
			if !apierrors.IsNotFound(err) {
				t.Errorf("refused with %v, want NotFound (version not served)", err)
			}
			// The same object as v2alpha1 is taken: the refusal is the version's.
			obj.SetAPIVersion(v2alpha1.GroupName + "/v2alpha1")
			r := dyn.Resource(schema.GroupVersionResource{Group: v2alpha1.GroupName, Version: "v2alpha1", Resource: c.plural})
			if _, err := r.Create(ctx, &obj, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
				t.Fatalf("refused as v2alpha1 too: %v", err)
			}
			_ = r.Delete(ctx, "as-v2", metav1.DeleteOptions{})
		})
	}
}
