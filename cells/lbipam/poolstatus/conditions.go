package poolstatus

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

// desiredConditions renders a pool's status as its four conditions. The
// counts have status Unknown and reason noreason, the value in the message.
// lastTransitionTime is kept from the current condition unless the status
// flips, so a count changing is not a "transition".
func desiredConditions(st *tables.LBPoolStatus, current []metav1.Condition, now time.Time) []metav1.Condition {
	conflict := metav1.Condition{
		Type:   tables.ConditionPoolConflict,
		Status: metav1.ConditionFalse,
		Reason: tables.ReasonResolved,
	}
	if st.Conflicting {
		conflict.Status, conflict.Reason, conflict.Message = metav1.ConditionTrue, tables.ReasonCIDROverlap, st.ConflictMessage
	}
	count := func(typ, value string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionUnknown, Reason: tables.ReasonNoReason, Message: value}
	}
	want := []metav1.Condition{
		conflict,
		count(tables.ConditionIPsTotal, st.Total),
		count(tables.ConditionIPsAvailable, st.Available),
		count(tables.ConditionIPsUsed, st.Used),
	}
	want = append(want, mistakes(st, current)...)
	stamp := metav1.NewTime(now.UTC().Truncate(time.Second))
	for i := range want {
		want[i].ObservedGeneration = st.ObservedGeneration
		want[i].LastTransitionTime = stamp
		for _, c := range current {
			if c.Type == want[i].Type && c.Status == want[i].Status {
				want[i].LastTransitionTime = c.LastTransitionTime
			}
		}
	}
	// Conditions of other writers are kept as they are.
	for _, c := range current {
		if !isOurs(c.Type) {
			want = append(want, c)
		}
	}
	return want
}

// mistakes renders the pool's own errors as conditions: True while the
// mistake is there, False once it is fixed, absent if it never happened.
func mistakes(st *tables.LBPoolStatus, current []metav1.Condition) []metav1.Condition {
	var out []metav1.Condition
	for _, m := range []struct{ typ, err string }{
		{tables.ConditionPoolBadServiceSelector, st.SelectorError},
		{tables.ConditionPoolBadBlocks, strings.Join(st.BlockErrors, "; ")},
		{tables.ConditionPoolBadAnnotations, st.ChoiceError},
	} {
		switch {
		case m.err != "":
			msg := m.err
			switch m.typ {
			case tables.ConditionPoolBadServiceSelector:
				msg += "; the pool selects no Service until this is fixed"
			case tables.ConditionPoolBadBlocks:
				msg += "; these blocks are ignored"
			}
			out = append(out, metav1.Condition{Type: m.typ, Status: metav1.ConditionTrue, Reason: tables.ReasonError, Message: msg})
		case hasCondition(current, m.typ):
			out = append(out, metav1.Condition{Type: m.typ, Status: metav1.ConditionFalse, Reason: tables.ReasonResolved})
		}
	}
	return out
}

func hasCondition(cs []metav1.Condition, typ string) bool {
	for _, c := range cs {
		if c.Type == typ {
			return true
		}
	}
	return false
}

func isOurs(typ string) bool {
	switch typ {
	case tables.ConditionPoolConflict, tables.ConditionIPsTotal, tables.ConditionIPsAvailable, tables.ConditionIPsUsed,
		tables.ConditionPoolBadServiceSelector, tables.ConditionPoolBadBlocks, tables.ConditionPoolBadAnnotations:
		return true
	}
	return false
}

// sameConditions compares what matters, ignoring timestamps.
func sameConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		found := false
		for _, y := range b {
			if x.Type == y.Type && x.Status == y.Status && x.Reason == y.Reason && x.Message == y.Message && x.ObservedGeneration == y.ObservedGeneration {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
