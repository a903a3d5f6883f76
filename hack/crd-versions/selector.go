package main

// metav1.LabelSelector's generated schema accepts any operator, any values
// and any label keys, while the API server's own objects (Deployments,
// NetworkPolicies, ...) reject selectors that cannot work. A pool with such a
// selector would silently match nothing, so reject it on apply. The rules
// mirror k8s.io/apimachinery/pkg/apis/meta/v1/validation.ValidateLabelSelector.
//
// Every rule here must compile and fit the CEL cost budget on the oldest
// Kubernetes Herald supports (1.31, see Documentation/install.md): no CEL
// format library (format.labelValue() etc. arrive in 1.32), no two-variable
// comprehensions (1.33), no cel.bind. test/crdvalidation runs against the
// oldest and the current kube-apiserver.

import "fmt"

// operators are the only valid label selector operators.
var operators = []any{"In", "NotIn", "Exists", "DoesNotExist"}

// operatorRules are added to every matchExpressions item. They only compare
// operator with literals and take size(values), so their CEL cost stays small.
var operatorRules = []any{
	map[string]any{
		"rule":    "!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",
		"message": "values must be non-empty when operator is In or NotIn",
	},
	map[string]any{
		"rule":    "!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",
		"message": "values must be empty when operator is Exists or DoesNotExist",
	},
}

// A label value is at most 63 characters: empty, or alphanumerics, '-', '_'
// and '.' starting and ending with an alphanumeric. It is checked with
// maxLength and pattern rather than CEL: they cost nothing in the CEL budget,
// so the values lists need no size limit, and the API server's message names
// the exact value (spec.serviceSelector.matchLabels.color,
// ...matchExpressions[0].values[1]). Cilium's own CRD has the same two on
// matchLabels values.
const (
	labelValueMaxLength = 63
	labelValuePattern   = `^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`
)

// A label key is an optional prefix and '/', then a name. The prefix is a
// DNS-1123 subdomain (lowercase alphanumerics and '-' in dot-separated parts,
// at most 253 characters); the name is at most 63 characters, with the same
// characters as a label value but not empty.
//
// Map keys (matchLabels) cannot carry a pattern, so keys are checked in CEL,
// the same expression for matchLabels keys and matchExpressions[].key. The
// regular expression checks the characters and the name's length (the {0,61}
// between its first and last character); indexOf('/') is the length of the
// prefix, -1 without one; the size check goes first so that an absurdly long
// key is rejected before the regular expression runs over it.
const (
	labelPrefixMaxLength = 253
	labelKeyMaxLength    = labelPrefixMaxLength + len("/") + 63
	labelKeyRegexp       = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	labelKeyRules        = "an optional DNS subdomain prefix of at most 253 characters and '/', " +
		"then a name of at most 63 characters: alphanumerics, '-', '_' and '.', " +
		"starting and ending with an alphanumeric (e.g. 'color' or 'example.com/tier')"
)

// validLabelKey is the CEL expression that holds when the string expression
// key is a valid label key.
func validLabelKey(key string) string {
	return fmt.Sprintf("size(%[1]s) <= %[2]d && %[1]s.indexOf('/') <= %[3]d && %[1]s.matches('%[4]s')",
		key, labelKeyMaxLength, labelPrefixMaxLength, labelKeyRegexp)
}

// The CEL cost estimate of a rule is multiplied by how often its schema can
// occur in an object. Without a bound, the API server assumes a 3 MB request
// full of the smallest possible matchExpressions items or matchLabels
// entries, and the key rules exceed the budget (10M per rule). The limits
// are far above any real selector: on 1.31 and 1.34 alike the key rule on
// matchExpressions would still fit with about 2,600 items, the one on
// matchLabels with about 260,000 entries (measured by applying the CRD).
const (
	maxMatchExpressions = 64
	maxMatchLabels      = 64
)

// patchLabelSelectors walks a schema and tightens every object that looks
// like a metav1.LabelSelector (matchLabels, and matchExpressions with
// key/operator/values). asCilium gives it only what Cilium's own CRDs have
// (see ciliumSelector), otherwise every rule of this file.
func patchLabelSelectors(node any, asCilium bool) {
	switch n := node.(type) {
	case map[string]any:
		if isLabelSelector(n) {
			props := n["properties"].(map[string]any)
			if asCilium {
				ciliumSelector(props)
			} else {
				patchMatchExpressions(props["matchExpressions"].(map[string]any))
				patchMatchLabels(props["matchLabels"].(map[string]any))
			}
		}
		for _, v := range n {
			patchLabelSelectors(v, asCilium)
		}
	case []any:
		for _, v := range n {
			patchLabelSelectors(v, asCilium)
		}
	}
}

// ciliumSelector gives a selector the schema of Cilium's slim LabelSelector:
// the operator enum and the label value rules on matchLabels values. They
// cost nothing in the CEL budget, so they fit anywhere.
func ciliumSelector(props map[string]any) {
	me := props["matchExpressions"].(map[string]any)
	op := me["items"].(map[string]any)["properties"].(map[string]any)["operator"].(map[string]any)
	op["enum"] = operators
	patchLabelValue(props["matchLabels"].(map[string]any)["additionalProperties"].(map[string]any))
}

func patchMatchExpressions(me map[string]any) {
	me["maxItems"] = maxMatchExpressions
	item := me["items"].(map[string]any)
	item["x-kubernetes-validations"] = operatorRules
	props := item["properties"].(map[string]any)

	key := props["key"].(map[string]any)
	key["maxLength"] = labelKeyMaxLength
	key["x-kubernetes-validations"] = []any{map[string]any{
		"rule":    validLabelKey("self"),
		"message": "key must be a valid label key: " + labelKeyRules,
	}}

	op := props["operator"].(map[string]any)
	op["enum"] = operators
	// Bounds the string size the CEL cost estimator assumes for operator;
	// "DoesNotExist" is the longest valid value.
	op["maxLength"] = len("DoesNotExist")

	patchLabelValue(props["values"].(map[string]any)["items"].(map[string]any))
}

func patchMatchLabels(ml map[string]any) {
	ml["maxProperties"] = maxMatchLabels
	ml["x-kubernetes-validations"] = []any{map[string]any{
		"rule":    "self.all(k, " + validLabelKey("k") + ")",
		"message": "matchLabels keys must be valid label keys: " + labelKeyRules,
	}}
	patchLabelValue(ml["additionalProperties"].(map[string]any))
}

func patchLabelValue(s map[string]any) {
	s["maxLength"] = labelValueMaxLength
	s["pattern"] = labelValuePattern
}

// isLabelSelector reports whether n is shaped like the schema of a
// metav1.LabelSelector: matchLabels a map of strings, matchExpressions items
// with key, operator and values.
func isLabelSelector(n map[string]any) bool {
	props, _ := n["properties"].(map[string]any)
	ml, _ := props["matchLabels"].(map[string]any)
	if _, ok := ml["additionalProperties"].(map[string]any); !ok {
		return false
	}
	me, _ := props["matchExpressions"].(map[string]any)
	item, _ := me["items"].(map[string]any)
	ip, _ := item["properties"].(map[string]any)
	for _, f := range []string{"key", "operator", "values"} {
		if _, ok := ip[f].(map[string]any); !ok {
			return false
		}
	}
	values, _ := ip["values"].(map[string]any)
	_, ok := values["items"].(map[string]any)
	return ok
}
