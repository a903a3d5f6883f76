package nodeipam

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/heraldlb/herald/tables"
)

// poolChoice is the pool a pod's address of one family comes from, and
// what decided it (for messages and `herald-dbg`).
type poolChoice struct {
	Pool string
	Why  string // e.g. `pod annotation ipam.cilium.io/ipv4-pool`
}

// podChooses reports whether the pod's own annotations choose its pool in
// every family: its namespace is then not read (Cilium reads it only for a
// family the pod leaves open).
func podChooses(pod map[string]string, families []tables.Family) bool {
	for _, f := range families {
		_, ip := annotated(pod, tables.AnnotationIPPool)
		_, fam := annotated(pod, familyAnnotation(f))
		if !ip && !fam {
			return false
		}
	}
	return true
}

// annotated returns the annotation's value, trimmed; an empty or blank
// value counts as no annotation, as in Cilium (which tests for != ""), so
// that a template that writes the key with an empty default falls through
// to the namespace and the default pool instead of failing every ADD.
func annotated(ann map[string]string, key string) (string, bool) {
	v := strings.TrimSpace(ann[key])
	return v, v != ""
}

func familyAnnotation(f tables.Family) string {
	if f == tables.IPv6 {
		return tables.AnnotationIPv6Pool
	}
	return tables.AnnotationIPv4Pool
}

// choosePool applies Cilium's order: on the pod, the family's annotation
// then ip-pool; then the same on its namespace; then the default pool
// (ipam-default-ip-pool). An empty value is no annotation; a value that
// cannot be a pool's name is an error naming the annotation.
func choosePool(pod, ns map[string]string, f tables.Family, defaultPool string) (poolChoice, error) {
	familyKey := familyAnnotation(f)
	for _, src := range []struct {
		what string
		ann  map[string]string
	}{{"pod", pod}, {"namespace", ns}} {
		for _, key := range []string{familyKey, tables.AnnotationIPPool} {
			v, ok := annotated(src.ann, key)
			if !ok {
				continue
			}
			if errs := validation.IsDNS1123Subdomain(v); len(errs) > 0 {
				return poolChoice{}, fmt.Errorf("%s annotation %s: %q cannot be the name of a CiliumPodIPPool: %s", src.what, key, v, strings.Join(errs, "; "))
			}
			return poolChoice{Pool: v, Why: src.what + " annotation " + key}, nil
		}
	}
	return poolChoice{Pool: defaultPool, Why: "no annotation: the default pool, ipam-default-ip-pool"}, nil
}
