package poolstatus

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

func TestMistakeConditions(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	find := func(cs []metav1.Condition, typ string) *metav1.Condition {
		for i := range cs {
			if cs[i].Type == typ {
				return &cs[i]
			}
		}
		return nil
	}
	base := tables.LBPoolStatus{Name: "p", Total: "0", Available: "0", Used: "0"}

	// A pool that never had a mistake shows only the four conditions.
	got := desiredConditions(&base, nil, now)
	if len(got) != 4 || find(got, tables.ConditionPoolBadServiceSelector) != nil || find(got, tables.ConditionPoolBadBlocks) != nil {
		t.Fatalf("clean pool: %+v", got)
	}

	bad := base
	bad.SelectorError = `spec.serviceSelector.matchLabels: Invalid value: "bad key!": name part must ...`
	bad.BlockErrors = []string{`spec.blocks[1]: start "10.0.0.9" is after stop "10.0.0.1"`}
	bad.ChoiceError = `annotation lbipam.herald.io/priority: "high" is not a priority (1 first, 2 next, ...); the pool has none until it is fixed`
	got = desiredConditions(&bad, nil, now)
	sel, blk := find(got, tables.ConditionPoolBadServiceSelector), find(got, tables.ConditionPoolBadBlocks)
	if ann := find(got, tables.ConditionPoolBadAnnotations); ann == nil || ann.Status != metav1.ConditionTrue || ann.Message != bad.ChoiceError {
		t.Fatalf("bad annotations condition: %+v", ann)
	}
	if sel == nil || sel.Status != metav1.ConditionTrue || sel.Reason != tables.ReasonError ||
		sel.Message != bad.SelectorError+"; the pool selects no Service until this is fixed" {
		t.Fatalf("bad selector condition: %+v", sel)
	}
	if blk == nil || blk.Status != metav1.ConditionTrue || blk.Message != bad.BlockErrors[0]+"; these blocks are ignored" {
		t.Fatalf("bad blocks condition: %+v", blk)
	}

	// Fixed: the conditions go False (resolved), as the spec's policy
	// conditions do.
	got = desiredConditions(&base, got, now)
	for _, typ := range []string{tables.ConditionPoolBadServiceSelector, tables.ConditionPoolBadBlocks, tables.ConditionPoolBadAnnotations} {
		c := find(got, typ)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tables.ReasonResolved || c.Message != "" {
			t.Fatalf("%s after the fix: %+v", typ, c)
		}
	}
}
