package migrate

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// orSelectors turns MetalLB's list of selectors, of which any one must
// match, into one LabelSelector. That is possible when the list is empty
// (everything), has one selector, or every selector asks for one value (or
// a set of values) of the same label key: they merge into one In
// requirement, e.g. kubernetes.io/hostname In (a, b). ok is false
// otherwise.
func orSelectors(sels []metav1.LabelSelector) (sel *metav1.LabelSelector, ok bool) {
	switch len(sels) {
	case 0:
		return nil, true
	case 1:
		return sels[0].DeepCopy(), true
	}
	var key string
	var values []string
	for _, s := range sels {
		k, vs, single := singleKey(s)
		if !single || (key != "" && k != key) {
			return nil, false
		}
		key = k
		for _, v := range vs {
			if !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
	}
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: key, Operator: metav1.LabelSelectorOpIn, Values: values},
	}}, true
}

// singleKey reports the key and values of a selector that requires one
// label to have one of some values, and nothing else.
func singleKey(s metav1.LabelSelector) (string, []string, bool) {
	switch {
	case len(s.MatchLabels) == 1 && len(s.MatchExpressions) == 0:
		for k, v := range s.MatchLabels {
			return k, []string{v}, true
		}
	case len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 1 &&
		s.MatchExpressions[0].Operator == metav1.LabelSelectorOpIn:
		return s.MatchExpressions[0].Key, s.MatchExpressions[0].Values, true
	}
	return "", nil, false
}

// withRequirement adds a requirement to a selector (nil: a new one).
func withRequirement(sel *metav1.LabelSelector, req metav1.LabelSelectorRequirement) *metav1.LabelSelector {
	if sel == nil {
		sel = &metav1.LabelSelector{}
	}
	sel.MatchExpressions = append(sel.MatchExpressions, req)
	return sel
}
