// Package migrate translates MetalLB's configuration (IPAddressPool,
// L2Advertisement, BGPPeer, BGPAdvertisement, Community, BFDProfile) into
// Herald's cilium.io objects, and says for every MetalLB field how well it
// maps. It is pure: decoding, translating and rendering, no API calls;
// herald-dbg's migrate command does the I/O.
package migrate

import (
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// Verdict says how well a MetalLB field maps to Herald.
type Verdict string

const (
	// Exact: Herald does the same.
	Exact Verdict = "exact"
	// Approximate: Herald does something close; the reason says how it
	// differs.
	Approximate Verdict = "approximate"
	// None: Herald has no equivalent; the field is not translated.
	None Verdict = "none"
)

// Finding is the verdict on one MetalLB field (or object).
type Finding struct {
	// Source is the MetalLB object, e.g. "IPAddressPool metallb-system/example".
	Source string
	// Field is the path of the field in Source; empty for the whole object.
	Field string
	Verdict
	// Target is where it went, e.g. "CiliumLoadBalancerIPPool/example spec.blocks[0]".
	Target string
	// Reason explains an approximate or missing mapping.
	Reason string
}

// String is the finding as one line of the report.
func (f Finding) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s %s", f.Verdict, f.Source)
	if f.Field != "" {
		b.WriteString(" " + f.Field)
	}
	if f.Target != "" {
		b.WriteString(" -> " + f.Target)
	}
	if f.Reason != "" {
		b.WriteString(": " + f.Reason)
	}
	return b.String()
}

// Result is the translation: Herald's objects and the findings.
type Result struct {
	// Objects are typed cilium.io/v2alpha1 objects, in the order they are
	// best applied (pools first, BGP peer configs before the cluster
	// configs that name them).
	Objects  []runtime.Object
	Findings []Finding
}

// Unstructured returns an object as it is applied: without status and
// without the empty creationTimestamp of a Go object that was never stored.
func Unstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if meta, ok := m["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// Render writes the findings as comments, then the objects as YAML
// documents: the output is itself a manifest kubectl can apply.
func (r Result) Render(w io.Writer) error {
	fmt.Fprintln(w, "# Translated from MetalLB by herald-dbg migrate metallb.")
	fmt.Fprintln(w, "# Mapping of every MetalLB field (exact, approximate, none):")
	for _, f := range r.Findings {
		fmt.Fprintln(w, "#   "+f.String())
	}
	for _, obj := range r.Objects {
		u, err := Unstructured(obj)
		if err != nil {
			return err
		}
		out, err := yaml.Marshal(u.Object)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", out); err != nil {
			return err
		}
	}
	return nil
}
