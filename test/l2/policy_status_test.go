package l2

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// TestPolicyStatus replays the spec's status example: a policy whose
// service selector has a NotIn without values is accepted by the API
// server, selects nothing, and says why in its status; fixing it turns the
// condition False and the Service gets announced, with an Event saying by
// which node.
func TestPolicyStatus(t *testing.T) {
	s := newScenario(t)
	s.createService("svc")
	vip := s.waitVIP("svc")
	name := s.createPolicy("status", func(spec *v2alpha1.CiliumL2AnnouncementPolicySpec) {
		spec.ServiceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "something", Operator: metav1.LabelSelectorOpNotIn},
		}}
	})
	const want = "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
	waitCondition := func(status metav1.ConditionStatus, reason, message string) {
		t.Helper()
		waitFor(t, func() (bool, string) {
			p, err := herald.CiliumV2alpha1().CiliumL2AnnouncementPolicies().Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, c := range p.Status.Conditions {
				if c.Type == tables.ConditionBadServiceSelector {
					ok := c.Status == status && c.Reason == reason && c.Message == message
					return ok, fmt.Sprintf("condition %s=%s reason %q message %q", c.Type, c.Status, c.Reason, c.Message)
				}
			}
			return false, fmt.Sprintf("no %s condition in %+v", tables.ConditionBadServiceSelector, p.Status.Conditions)
		})
	}
	waitCondition(metav1.ConditionTrue, tables.ReasonError, want)
	if lease, err := s.lease("svc"); err != nil {
		t.Fatal(err)
	} else if h := holderOf(lease); h != "" {
		t.Fatalf("a broken policy announced the Service: lease held by %s", h)
	}

	s.updatePolicy(name, func(spec *v2alpha1.CiliumL2AnnouncementPolicySpec) {
		spec.ServiceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{testLabel: s.label}}
	})
	waitCondition(metav1.ConditionFalse, tables.ReasonError, "")
	owner := s.waitOwner("svc", vip)
	waitFor(t, func() (bool, string) {
		evs, err := kube.CoreV1().Events(s.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=svc"})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range evs.Items {
			seen = append(seen, e.Reason+": "+e.Message)
			if e.Reason == "L2Announced" && strings.Contains(e.Message, "Node "+owner.Name+" announces "+vip.String()+" on eth0") {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events: %q", seen)
	})
}
