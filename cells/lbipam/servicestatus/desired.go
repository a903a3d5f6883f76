package servicestatus

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

// desiredCondition returns the io.cilium/lb-ipam-request-satisfied condition
// for a decision. lastTransitionTime only moves when the status flips.
func desiredCondition(a *tables.LBAllocation, current *tables.Service, now time.Time) metav1.Condition {
	status := metav1.ConditionFalse
	if a.Satisfied {
		status = metav1.ConditionTrue
	}
	c := metav1.Condition{
		Type:               tables.ConditionRequestSatisfied,
		Status:             status,
		ObservedGeneration: a.Generation,
		Reason:             a.Reason,
		Message:            a.Message,
		LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second)),
	}
	if current != nil {
		if old, ok := current.Condition(tables.ConditionRequestSatisfied); ok && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	return c
}

// desiredDisagreement returns the annotations-disagree condition for a
// decision, or false when the Service should not carry it.
func desiredDisagreement(a *tables.LBAllocation, current *tables.Service, now time.Time) (metav1.Condition, bool) {
	if !a.Managed || a.Disagreement == "" {
		return metav1.Condition{}, false
	}
	c := metav1.Condition{
		Type:               tables.ConditionAnnotationsDisagree,
		Status:             metav1.ConditionTrue,
		ObservedGeneration: a.Generation,
		Reason:             tables.ReasonMetalLBAnnotationIgnored,
		Message:            a.Disagreement,
		LastTransitionTime: metav1.NewTime(now.UTC().Truncate(time.Second)),
	}
	if old, ok := current.Condition(tables.ConditionAnnotationsDisagree); ok && old.Status == c.Status {
		c.LastTransitionTime = old.LastTransitionTime
	}
	return c, true
}

// disagreementUpToDate reports whether the Service shows the
// annotations-disagree condition exactly when the decision has one.
func disagreementUpToDate(a *tables.LBAllocation, svc *tables.Service) bool {
	c, ok := svc.Condition(tables.ConditionAnnotationsDisagree)
	if !a.Managed || a.Disagreement == "" {
		return !ok
	}
	return ok && c.Status == metav1.ConditionTrue && c.Message == a.Disagreement && c.ObservedGeneration == a.Generation
}

// upToDate reports whether the Service already shows the decision, so that
// nothing is written (restarts and refreshes then cost no API writes).
func upToDate(a *tables.LBAllocation, svc *tables.Service) bool {
	if !disagreementUpToDate(a, svc) {
		return false
	}
	if !a.Managed {
		_, hasCond := svc.Condition(tables.ConditionRequestSatisfied)
		return !hasCond && (!svc.ManagedByHerald || len(svc.IngressIPs) == 0)
	}
	if !slices.Equal(a.Addrs(), svc.IngressIPs) {
		return false
	}
	c, ok := svc.Condition(tables.ConditionRequestSatisfied)
	want := metav1.ConditionFalse
	if a.Satisfied {
		want = metav1.ConditionTrue
	}
	return ok && c.Status == want && c.Reason == a.Reason && c.Message == a.Message && c.ObservedGeneration == a.Generation
}
