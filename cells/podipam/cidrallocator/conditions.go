package cidrallocator

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

type problem struct{ typ, reason, msg string }

// poolProblems lists the pool's condition types with their reason and
// current message ("" = does not apply).
func poolProblems(st *tables.PodIPPoolStatus) []problem {
	return []problem{
		{tables.ConditionPodPoolInvalidSpec, tables.ReasonError, st.InvalidSpec},
		{tables.ConditionPodPoolConflict, tables.ReasonCIDROverlap, st.Conflict},
		{tables.ConditionPodPoolClaimedTwice, tables.ReasonPodPoolClaimedTwice, st.ClaimedTwice},
		{tables.ConditionPodPoolExhausted, tables.ReasonPodPoolExhausted, st.Exhausted},
		{tables.ConditionPodPoolRemovedInUse, tables.ReasonPodPoolInUse, st.RemovedInUse},
		{tables.ConditionPodPoolTerminating, tables.ReasonPodPoolInUse, st.Terminating},
	}
}

// desiredPoolConditions renders the status as conditions. PoolConflict is
// always there (as on LB IPAM pools); the others appear the first time
// they apply, and turn False (resolved) after. Other writers' conditions
// stay. lastTransitionTime moves only when a status flips.
func desiredPoolConditions(st *tables.PodIPPoolStatus, current []metav1.Condition, generation int64, now time.Time) []metav1.Condition {
	stamp := metav1.NewTime(now.UTC().Truncate(time.Second))
	var out []metav1.Condition
	ours := map[string]bool{}
	for _, p := range poolProblems(st) {
		ours[p.typ] = true
		c := metav1.Condition{Type: p.typ, ObservedGeneration: generation, LastTransitionTime: stamp}
		old, had := condition(current, p.typ)
		switch {
		case p.msg != "":
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, p.reason, p.msg
		case had || p.typ == tables.ConditionPodPoolConflict:
			c.Status, c.Reason = metav1.ConditionFalse, tables.ReasonResolved
		default:
			continue
		}
		if had && old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		}
		out = append(out, c)
	}
	for _, c := range current {
		if !ours[c.Type] {
			out = append(out, c)
		}
	}
	return out
}

func condition(cs []metav1.Condition, typ string) (metav1.Condition, bool) {
	for _, c := range cs {
		if c.Type == typ {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

// samePoolConditions compares what matters, ignoring timestamps.
func samePoolConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		y, ok := condition(b, x.Type)
		if !ok || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
