package migrate

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationMigratedFrom names, on every object the translation makes, the
// MetalLB object(s) it comes from.
const AnnotationMigratedFrom = "herald.io/migrated-from"

// findings collects the findings of one MetalLB object.
type findings struct {
	source   string
	findings []Finding
}

func (f *findings) add(field string, v Verdict, target, reason string) {
	f.findings = append(f.findings, Finding{Source: f.source, Field: field, Verdict: v, Target: target, Reason: reason})
}

// objectMeta is the metadata of a Herald object made from src.
func objectMeta(src Object, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Annotations: map[string]string{AnnotationMigratedFrom: "metallb.io " + src.Ref()},
	}
}
