package crdvalidation

import (
	"context"
	"reflect"
	"strings"
	"testing"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// The BGP resources are served as cilium.io/v2alpha1 and cilium.io/v2 with
// one schema (hack/crd-versions), stored as v2 as in Cilium.

func bgpGVRAt(version, plural string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: v2alpha1.GroupName, Version: version, Resource: plural}
}

// bgpManifests are Cilium's documentation examples of bgp_test.go, by
// resource.
var bgpManifests = []struct{ plural, doc string }{
	{v2alpha1.BGPClusterConfigPlural, bgpClusterConfig},
	{v2alpha1.BGPPeerConfigPlural, bgpPeerConfig},
	{v2alpha1.BGPAdvertisementPlural, bgpAdvertisements},
	{v2alpha1.BGPNodeConfigOverridePlural, bgpNodeConfigOverride},
	{v2alpha1.BGPNodeConfigPlural, bgpNodeConfig},
}

// createAt creates doc as apiVersion cilium.io/<version>, named name,
// strictly (an unknown field is an error), and deletes it at the end.
func createAt(t *testing.T, version, plural, name, doc string) {
	t.Helper()
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	obj.SetAPIVersion(v2alpha1.GroupName + "/" + version)
	obj.SetName(name)
	r := dyn.Resource(bgpGVRAt(version, plural))
	if _, err := r.Create(context.Background(), &obj, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("creating %s %s as %s: %v", obj.GetKind(), name, version, err)
	}
	t.Cleanup(func() { _ = r.Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// specAt reads an object's spec through one version.
func specAt(t *testing.T, version, plural, name string) map[string]any {
	t.Helper()
	u, err := dyn.Resource(bgpGVRAt(version, plural)).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s %s as %s: %v", plural, name, version, err)
	}
	if av := u.GetAPIVersion(); av != v2alpha1.GroupName+"/"+version {
		t.Errorf("%s %s read as %s says apiVersion %s", plural, name, version, av)
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	return spec
}

// A manifest written for either version reads back the same through the
// other one, and the same as one written for that other version.
func TestBGPServedAsBothVersions(t *testing.T) {
	for _, m := range bgpManifests {
		t.Run(m.plural, func(t *testing.T) {
			for _, w := range []struct{ wrote, read string }{{"v2alpha1", "v2"}, {"v2", "v2alpha1"}} {
				name := "versions-" + w.wrote
				createAt(t, w.wrote, m.plural, name, m.doc)
				asWritten, asOther := specAt(t, w.wrote, m.plural, name), specAt(t, w.read, m.plural, name)
				if !reflect.DeepEqual(asWritten, asOther) {
					t.Errorf("written as %s, read as %s:\n%v\nread as %s:\n%v", w.wrote, w.wrote, asWritten, w.read, asOther)
				}
			}
			if a, b := specAt(t, "v2", m.plural, "versions-v2alpha1"), specAt(t, "v2", m.plural, "versions-v2"); !reflect.DeepEqual(a, b) {
				t.Errorf("written as v2alpha1:\n%v\nwritten as v2:\n%v", a, b)
			}
		})
	}
}

// The CRDs store the BGP resources and the LB IPAM pools as v2, as Cilium's
// do.
func TestStorageVersions(t *testing.T) {
	ext, err := apiextensions.NewForConfig(testCluster.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	crds := ext.ApiextensionsV1().CustomResourceDefinitions()
	for plural, want := range map[string]string{
		v2alpha1.BGPClusterConfigPlural: "v2", v2alpha1.BGPPeerConfigPlural: "v2", v2alpha1.BGPAdvertisementPlural: "v2",
		v2alpha1.BGPNodeConfigOverridePlural: "v2", v2alpha1.BGPNodeConfigPlural: "v2", v2alpha1.PoolPlural: "v2",
	} {
		crd, err := crds.Get(context.Background(), plural+"."+v2alpha1.GroupName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var served []string
		storage := ""
		for _, v := range crd.Spec.Versions {
			if v.Served {
				served = append(served, v.Name)
			}
			if v.Storage {
				storage = v.Name
			}
		}
		if storage != want || strings.Join(served, ",") != "v2alpha1,v2" {
			t.Errorf("%s: served %v, stored as %s; want v2alpha1 and v2, stored as %s", plural, served, storage, want)
		}
	}
}
