package main

// metav1.LabelSelector's generated schema accepts any operator and any values,
// while the API server's own objects (Deployments, NetworkPolicies, ...) reject
// selectors that cannot work. A pool with such a selector would silently match
// nothing, so reject it on apply. The rules mirror
// k8s.io/apimachinery/pkg/apis/meta/v1/validation.ValidateLabelSelectorRequirement.

// operators are the only valid label selector operators.
var operators = []any{"In", "NotIn", "Exists", "DoesNotExist"}

// selectorRules are added to every matchExpressions item. They only compare
// operator with literals and take size(values), so their CEL cost stays small.
var selectorRules = []any{
	map[string]any{
		"rule":    "!(self.operator in ['In', 'NotIn']) || (has(self.values) && size(self.values) > 0)",
		"message": "values must be non-empty when operator is In or NotIn",
	},
	map[string]any{
		"rule":    "!(self.operator in ['Exists', 'DoesNotExist']) || !has(self.values) || size(self.values) == 0",
		"message": "values must be empty when operator is Exists or DoesNotExist",
	},
}

// patchLabelSelectors walks a schema and tightens every object that looks
// like a metav1.LabelSelector (has matchExpressions with key/operator/values).
func patchLabelSelectors(node any) {
	switch n := node.(type) {
	case map[string]any:
		if item := matchExpressionItem(n); item != nil {
			props := item["properties"].(map[string]any)
			op := props["operator"].(map[string]any)
			op["enum"] = operators
			// Bounds the string size the CEL cost estimator assumes for
			// operator; "DoesNotExist" is the longest valid value.
			op["maxLength"] = len("DoesNotExist")
			item["x-kubernetes-validations"] = selectorRules
		}
		for _, v := range n {
			patchLabelSelectors(v)
		}
	case []any:
		for _, v := range n {
			patchLabelSelectors(v)
		}
	}
}

// matchExpressionItem returns the items schema of n.properties.matchExpressions
// when n is shaped like a label selector, else nil.
func matchExpressionItem(n map[string]any) map[string]any {
	props, _ := n["properties"].(map[string]any)
	me, _ := props["matchExpressions"].(map[string]any)
	item, _ := me["items"].(map[string]any)
	ip, _ := item["properties"].(map[string]any)
	for _, f := range []string{"key", "operator", "values"} {
		if _, ok := ip[f].(map[string]any); !ok {
			return nil
		}
	}
	return item
}
