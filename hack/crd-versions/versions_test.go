package main

import (
	"testing"

	"sigs.k8s.io/yaml"
)

// tinyCRD is what controller-gen writes, cut down to what process reads.
func tinyCRD(name string) []byte {
	return []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: ` + name + `
spec:
  versions:
  - name: v2alpha1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, properties: {a: {type: string}}}
`)
}

// The extra versions are copies of the schema; storedAs moves the storage
// version to the copy, and exactly one version stays the storage one.
func TestExtraVersions(t *testing.T) {
	for _, c := range []struct {
		crd         string
		wantStorage map[string]bool
	}{
		{"ciliumbgpclusterconfigs.cilium.io", map[string]bool{"v2alpha1": false, "v2": true}},
		{"ciliumloadbalancerippools.cilium.io", map[string]bool{"v2alpha1": false, "v2": true}},
		{"ciliuml2announcementpolicies.cilium.io", map[string]bool{"v2alpha1": true}},
		{"ciliumpodippools.cilium.io", map[string]bool{"v2alpha1": true}},
	} {
		t.Run(c.crd, func(t *testing.T) {
			out, err := process(tinyCRD(c.crd))
			if err != nil {
				t.Fatal(err)
			}
			var crd struct {
				Spec struct {
					Versions []struct {
						Name    string         `json:"name"`
						Served  bool           `json:"served"`
						Storage bool           `json:"storage"`
						Schema  map[string]any `json:"schema"`
					} `json:"versions"`
				} `json:"spec"`
			}
			if err := yaml.Unmarshal(out, &crd); err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, v := range crd.Spec.Versions {
				got[v.Name] = v.Storage
				if !v.Served || v.Schema == nil {
					t.Errorf("version %s: served %v, schema %v", v.Name, v.Served, v.Schema)
				}
			}
			if len(got) != len(c.wantStorage) {
				t.Fatalf("versions %v, want %v", got, c.wantStorage)
			}
			for v, s := range c.wantStorage {
				if got[v] != s {
					t.Errorf("versions (name: storage) %v, want %v", got, c.wantStorage)
				}
			}
		})
	}
}
