package policystatus

import (
	"context"
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/heraldlb/herald/api/client/clientset/versioned"
	"github.com/heraldlb/herald/tables"
)

// policyConditions returns the policy's conditions with the three error
// conditions as they should be, and whether that differs from its status.
// A condition is True (reason "error", the parse error as message) while
// its field is broken, and turns False once fixed, keeping reason "error"
// with an empty message as Cilium's agent does (a client that matches on
// the reason sees the same as under Cilium); it is not added to a policy
// that never had the problem.
func policyConditions(pol *tables.L2Policy, now time.Time) ([]metav1.Condition, bool) {
	out := make([]metav1.Condition, 0, len(pol.Conditions)+3)
	changed := false
	checks := []struct{ typ, err string }{
		{tables.ConditionBadServiceSelector, pol.ServiceSelectorError},
		{tables.ConditionBadNodeSelector, pol.NodeSelectorError},
		{tables.ConditionBadInterfaceRegex, pol.InterfaceError},
	}
	ours := map[string]bool{}
	for _, c := range checks {
		ours[c.typ] = true
		old, had := findCondition(pol.Conditions, c.typ)
		if c.err == "" && !had {
			continue
		}
		want := metav1.Condition{Type: c.typ, Status: metav1.ConditionFalse, Reason: tables.ReasonError, ObservedGeneration: pol.Generation}
		if c.err != "" {
			want.Status, want.Reason, want.Message = metav1.ConditionTrue, tables.ReasonError, c.err
		}
		want.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
		if had && old.Status == want.Status {
			want.LastTransitionTime = old.LastTransitionTime
		}
		if !had || old.Status != want.Status || old.Reason != want.Reason || old.Message != want.Message || old.ObservedGeneration != want.ObservedGeneration {
			changed = true
		}
		out = append(out, want)
	}
	for _, c := range pol.Conditions {
		if !ours[c.Type] {
			out = append(out, c)
		}
	}
	return out, changed
}

func findCondition(cs []metav1.Condition, typ string) (metav1.Condition, bool) {
	for _, c := range cs {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

func patchPolicyStatus(ctx context.Context, client versioned.Interface, pol *tables.L2Policy, conds []metav1.Condition) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": pol.UID},
		"status":   map[string]any{"conditions": conds},
	})
	if err != nil {
		return err
	}
	_, err = client.CiliumV2alpha1().CiliumL2AnnouncementPolicies().Patch(ctx, pol.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: tables.HeraldFieldManager}, "status")
	return err
}
