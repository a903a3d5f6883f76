package main

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// The schema's label rules must accept exactly what Kubernetes accepts as a
// label key (validation.IsQualifiedName) and a label value
// (validation.IsValidLabelValue). CEL's matches() and OpenAPI's pattern are
// both RE2, so Go's regexp runs the same expressions here; test/crdvalidation
// checks the generated rules on real API servers.

var (
	keyRegexp   = regexp.MustCompile(labelKeyRegexp)
	valueRegexp = regexp.MustCompile(labelValuePattern)
)

// schemaAcceptsKey does in Go what the CEL expression of validLabelKey does:
// size() and indexOf() count code points.
func schemaAcceptsKey(k string) bool {
	prefixLen := -1
	if i := strings.Index(k, "/"); i >= 0 {
		prefixLen = utf8.RuneCountInString(k[:i])
	}
	return utf8.RuneCountInString(k) <= labelKeyMaxLength && prefixLen <= labelPrefixMaxLength && keyRegexp.MatchString(k)
}

// schemaAcceptsValue does what maxLength and pattern do (maxLength counts
// code points too).
func schemaAcceptsValue(v string) bool {
	return utf8.RuneCountInString(v) <= labelValueMaxLength && valueRegexp.MatchString(v)
}

var labelSamples = []string{
	"", "a", "color", "Color", "io.kubernetes.service.namespace", "app.kubernetes.io/name",
	"example.com/tier", "Example.com/tier", "example.com/", "/tier", "a/b/c", "a//b",
	"bad key!", "a b c", "-a", "a-", "_a", "a_", ".a", "a.", "a-b_c.d", "a..b", "ex-.com/a", "ex.-com/a",
	"é", "a/é", "1.2.3.4/x", "x/y.z",
	strings.Repeat("n", 63), strings.Repeat("n", 64), strings.Repeat("v", 300),
	dnsName(253) + "/" + strings.Repeat("n", 63), dnsName(254) + "/n", dnsName(253) + "/" + strings.Repeat("n", 64),
}

// dnsName returns a valid DNS subdomain of n characters.
func dnsName(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 && b.Len()%50 == 0 && b.Len() < n-1 {
			b.WriteByte('.')
			continue
		}
		b.WriteByte('d')
	}
	return b.String()
}

func TestLabelKeyRule(t *testing.T) {
	for _, k := range labelSamples {
		checkKey(t, k)
	}
}

func TestLabelValueRule(t *testing.T) {
	for _, v := range labelSamples {
		checkValue(t, v)
	}
}

// FuzzLabelRules feeds each input to both rules: one target keeps
// make fuzz short.
func FuzzLabelRules(f *testing.F) {
	for _, s := range labelSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkKey(t, s)
		checkValue(t, s)
	})
}

func checkKey(t *testing.T, k string) {
	errs := validation.IsQualifiedName(k)
	if got, want := schemaAcceptsKey(k), len(errs) == 0; got != want {
		t.Errorf("key %q: schema accepts = %v, Kubernetes accepts = %v %v", k, got, want, errs)
	}
}

func checkValue(t *testing.T, v string) {
	errs := validation.IsValidLabelValue(v)
	if got, want := schemaAcceptsValue(v), len(errs) == 0; got != want {
		t.Errorf("value %q: schema accepts = %v, Kubernetes accepts = %v %v", v, got, want, errs)
	}
}

// selectorCRD is a CRD with a bare metav1.LabelSelector, as controller-gen
// writes it.
const selectorCRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: NAME
spec:
  versions:
  - name: v1
    storage: true
    schema:
      openAPIV3Schema:
        properties:
          selector:
            properties:
              matchExpressions:
                items:
                  properties:
                    key: {type: string}
                    operator: {type: string}
                    values: {items: {type: string}, type: array}
                  type: object
                type: array
              matchLabels:
                additionalProperties: {type: string}
                type: object
            type: object
`

func TestOnlyStrictCRDsArePatched(t *testing.T) {
	for name, strict := range map[string]bool{
		"ciliumloadbalancerippools.cilium.io":    true,
		"ciliuml2announcementpolicies.cilium.io": false,
	} {
		out, err := process([]byte(strings.Replace(selectorCRD, "NAME", name, 1)))
		if err != nil {
			t.Fatal(err)
		}
		var crd map[string]any
		if err := yaml.Unmarshal(out, &crd); err != nil {
			t.Fatal(err)
		}
		sel := dig(crd, "spec", "versions", 0, "schema", "openAPIV3Schema", "properties", "selector", "properties")
		checks := map[string]any{
			"matchExpressions maxItems":      dig(sel, "matchExpressions", "maxItems"),
			"key rule":                       dig(sel, "matchExpressions", "items", "properties", "key", "x-kubernetes-validations"),
			"operator enum":                  dig(sel, "matchExpressions", "items", "properties", "operator", "enum"),
			"values pattern":                 dig(sel, "matchExpressions", "items", "properties", "values", "items", "pattern"),
			"matchLabels maxProperties":      dig(sel, "matchLabels", "maxProperties"),
			"matchLabels key rule":           dig(sel, "matchLabels", "x-kubernetes-validations"),
			"matchLabels values maxLength":   dig(sel, "matchLabels", "additionalProperties", "maxLength"),
			"matchExpressions operator rule": dig(sel, "matchExpressions", "items", "x-kubernetes-validations"),
		}
		for what, v := range checks {
			if (v != nil) != strict {
				t.Errorf("%s: %s = %v, want it set: %v", name, what, v, strict)
			}
		}
	}
}

// dig follows map keys and list indexes; nil when a step is missing.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}
