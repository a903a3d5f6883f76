package policystatus

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

func TestPolicyConditions(t *testing.T) {
	now := time.Date(2026, 5, 12, 15, 39, 1, 0, time.UTC)
	broken := v2alpha1.CiliumL2AnnouncementPolicySpec{ServiceSelector: &metav1.LabelSelector{
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "something", Operator: metav1.LabelSelectorOpNotIn}},
	}}
	// The spec's example: the condition appears with its message...
	pol := policy("policy1", broken)
	conds, changed := policyConditions(pol, now)
	if !changed || len(conds) != 1 {
		t.Fatalf("changed=%v conds=%+v", changed, conds)
	}
	c := conds[0]
	if c.Type != "io.cilium/bad-service-selector" || c.Status != metav1.ConditionTrue || c.Reason != "error" ||
		c.Message != "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty" {
		t.Fatalf("condition: %+v", c)
	}
	// ...is stable once written...
	pol.Conditions = conds
	if _, changed := policyConditions(pol, now.Add(time.Minute)); changed {
		t.Fatal("rewrites an unchanged condition")
	}
	// ...and goes False when the selector is fixed.
	fixed := policy("policy1", v2alpha1.CiliumL2AnnouncementPolicySpec{})
	fixed.Conditions = conds
	conds, changed = policyConditions(fixed, now.Add(time.Hour))
	if !changed || conds[0].Status != metav1.ConditionFalse || conds[0].Reason != tables.ReasonError || conds[0].Message != "" {
		t.Fatalf("after fix: %+v", conds)
	}
	// A healthy policy never gets the condition.
	if conds, changed := policyConditions(policy("ok", v2alpha1.CiliumL2AnnouncementPolicySpec{}), now); changed || len(conds) != 0 {
		t.Fatalf("healthy policy: %v %+v", changed, conds)
	}
}

func policy(name string, spec v2alpha1.CiliumL2AnnouncementPolicySpec) *tables.L2Policy {
	p := &v2alpha1.CiliumL2AnnouncementPolicy{Spec: spec}
	p.Name = name
	return tables.L2PolicyFromK8s(p)
}
