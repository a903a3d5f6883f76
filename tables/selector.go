package tables

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateSelector checks a selector the way the API server checks the
// selectors of its own objects (Deployments, NetworkPolicies): every key a
// valid label key, every value a valid label value, operators with the
// right number of values. The error names the field and the rule, e.g.
// spec.serviceSelector.matchLabels: Invalid value: "bad key!": name part
// must consist of alphanumeric characters, ...
func validateSelector(ls *metav1.LabelSelector, path *field.Path) error {
	if ls == nil {
		return nil
	}
	return metav1validation.ValidateLabelSelector(ls, metav1validation.LabelSelectorValidationOptions{}, path).ToAggregate()
}

// selectorFrom parses a label selector; nil selects everything.
//
// The two most common mistakes are reported in the words of the API's own
// validation as users see it in status and documentation (e.g. "values:
// Invalid value: []string(nil): for 'in', 'notin' operators, values set
// can't be empty"); newer apimachinery renders the value differently, and
// conditions are an interface users grep for.
func selectorFrom(ls *metav1.LabelSelector) (labels.Selector, error) {
	if ls == nil {
		return labels.Everything(), nil
	}
	for _, req := range ls.MatchExpressions {
		switch req.Operator {
		case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
			if len(req.Values) == 0 {
				return nil, fmt.Errorf("values: Invalid value: %#v: for 'in', 'notin' operators, values set can't be empty", req.Values)
			}
		case metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				return nil, fmt.Errorf("values: Invalid value: %#v: values set must be empty for exists and does not exist", req.Values)
			}
		}
	}
	return metav1.LabelSelectorAsSelector(ls)
}
