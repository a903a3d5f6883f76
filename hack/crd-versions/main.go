// Command crd-versions post-processes the CRDs that controller-gen writes and
// is run by hack/generate.sh:
//
//	go run ./hack/crd-versions IN_DIR OUT_DIR
//
// For every IN_DIR/*.yaml it writes OUT_DIR/<same name> after
//   - tightening every metav1.LabelSelector in the schemas (see selector.go):
//     strictly, or as Cilium's own CRDs do,
//   - adding the extra served versions listed in extraVersions.
//
// Cilium serves some CRDs under more than one version with the same schema
// (e.g. CiliumLoadBalancerIPPool as cilium.io/v2alpha1 and cilium.io/v2).
// controller-gen can only emit one version per Go package, and duplicating the
// Go types in a v2 package would only add code to keep in sync, so the extra
// versions are copies of the schema, printer columns and subresources of
// the version of the Go types (storedAs may make a copy the storage version). With identical schemas the API server's default "None"
// conversion (rewrite apiVersion only) is correct.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"sigs.k8s.io/yaml"
)

// strictSelectors lists the CRDs whose label selectors get the rules of
// selector.go (operators, values, label keys and values). The agent also
// reports a bad pool selector (io.cilium/bad-service-selector), for pools
// stored before these rules existed. CiliumL2AnnouncementPolicy is left out on
// purpose: its spec reports a bad selector in the policy's status
// (io.cilium/bad-service-selector) instead of rejecting it.
var strictSelectors = map[string]bool{
	"ciliumloadbalancerippools.cilium.io": true,
}

// ciliumSelectors lists the CRDs whose label selectors get the schema of
// Cilium's own ("slim") LabelSelector instead: the operator enum and the
// label value pattern, no CEL. The BGP CRDs have their selectors inside
// lists without a size limit (advertisements, families), where the CEL rules
// of strictSelectors exceed the API server's cost budget; limiting those
// lists would refuse objects Cilium accepts.
var ciliumSelectors = map[string]bool{
	"ciliumbgpclusterconfigs.cilium.io": true,
	"ciliumbgppeerconfigs.cilium.io":    true,
	"ciliumbgpadvertisements.cilium.io": true,
}

// extraVersions maps a CRD name to the versions it is also served under:
// those that Cilium's current release (1.20) serves besides v2alpha1.
//
// CiliumPodIPPool is not here because Cilium 1.20 does not serve a v2 of
// it: its CRD declares one, but unserved (the v2 Go type is marked
// +kubebuilder:unservedversion), so a Cilium 1.20 cluster accepts
// v2alpha1 only. Cilium's main branch serves v2 and stores it since 1.20
// was released, with another schema (each of cidrs an object with a cidr
// and a reservedRange, not a string): a copy of the v2alpha1 schema would
// refuse those manifests and the default "None" conversion would be wrong,
// so serving that v2 takes more than an entry here.
//
// CiliumL2AnnouncementPolicy is v2alpha1 only in Cilium: it has no v2 Go
// type or CRD version, served or not.
var extraVersions = map[string][]string{
	"ciliumloadbalancerippools.cilium.io":    {"v2"},
	"ciliumbgpclusterconfigs.cilium.io":      {"v2"},
	"ciliumbgppeerconfigs.cilium.io":         {"v2"},
	"ciliumbgpadvertisements.cilium.io":      {"v2"},
	"ciliumbgpnodeconfigs.cilium.io":         {"v2"},
	"ciliumbgpnodeconfigoverrides.cilium.io": {"v2"},
}

// storedAs names the extra version that becomes the storage version, as
// in Cilium, whose BGP resources are stored as v2 since v2 exists and its
// LB IPAM pools since 1.18. With identical schemas this is safe both ways:
// objects already stored as v2alpha1 are read through the "None"
// conversion (only apiVersion changes) and rewritten as v2 on their next
// update, and Herald, which reads and writes v2alpha1, sees the same
// objects. A cluster coming from Cilium, whose status.storedVersions lists
// v2, needs no migration.
var storedAs = map[string]string{
	"ciliumloadbalancerippools.cilium.io":    "v2",
	"ciliumbgpclusterconfigs.cilium.io":      "v2",
	"ciliumbgppeerconfigs.cilium.io":         "v2",
	"ciliumbgpadvertisements.cilium.io":      "v2",
	"ciliumbgpnodeconfigs.cilium.io":         "v2",
	"ciliumbgpnodeconfigoverrides.cilium.io": "v2",
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: crd-versions IN_DIR OUT_DIR")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "crd-versions:", err)
		os.Exit(1)
	}
}

func run(inDir, outDir string) error {
	files, err := filepath.Glob(filepath.Join(inDir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs in %s", inDir)
	}
	for _, f := range files {
		in, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		out, err := process(in)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := os.WriteFile(filepath.Join(outDir, filepath.Base(f)), out, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// process rewrites one CRD document. It works on plain maps rather than the
// apiextensions types so that the output is byte-for-byte what controller-gen
// itself writes (sigs.k8s.io/yaml, sorted keys, no empty status).
func process(in []byte) ([]byte, error) {
	var crd map[string]any
	if err := yaml.Unmarshal(in, &crd); err != nil {
		return nil, err
	}
	spec, _ := crd["spec"].(map[string]any)
	versions, _ := spec["versions"].([]any)
	if len(versions) == 0 {
		return nil, fmt.Errorf("no spec.versions")
	}
	name, _ := crd["metadata"].(map[string]any)["name"].(string)
	for _, v := range versions {
		s, ok := v.(map[string]any)["schema"].(map[string]any)
		switch {
		case ok && strictSelectors[name]:
			patchLabelSelectors(s["openAPIV3Schema"], false)
		case ok && ciliumSelectors[name]:
			patchLabelSelectors(s["openAPIV3Schema"], true)
		}
	}

	if extra := extraVersions[name]; len(extra) > 0 {
		storage, err := storageVersion(versions)
		if err != nil {
			return nil, err
		}
		for _, ver := range extra {
			v, err := deepCopy(storage)
			if err != nil {
				return nil, err
			}
			v["name"] = ver
			v["served"] = true
			v["storage"] = storedAs[name] == ver
			if storedAs[name] == ver {
				storage["storage"] = false
			}
			versions = append(versions, v)
		}
		spec["versions"] = versions
	}

	out, err := yaml.Marshal(crd)
	if err != nil {
		return nil, err
	}
	return append([]byte("---\n"), out...), nil
}

func storageVersion(versions []any) (map[string]any, error) {
	for _, v := range versions {
		if m, ok := v.(map[string]any); ok && m["storage"] == true {
			return m, nil
		}
	}
	return nil, fmt.Errorf("no storage version")
}

// deepCopy copies a JSON-shaped map, so that editing the copy (or the
// original later) cannot alias the other version's schema.
func deepCopy(m map[string]any) (map[string]any, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(b, &out)
}
