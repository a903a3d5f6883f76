package servicestatus

import (
	"net/netip"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/tables"
)

// The annotations-disagree condition is on the Service exactly while the
// decision carries a disagreement, with its message.
func TestDisagreementCondition(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	addr := netip.MustParseAddr("198.18.0.1")
	decision := func(dis string) *tables.LBAllocation {
		return &tables.LBAllocation{Managed: true, Satisfied: true, Reason: tables.ReasonSatisfied, Generation: 1,
			IPs: []tables.AllocatedIP{{Addr: addr}}, Disagreement: dis}
	}
	satisfied := metav1.Condition{Type: tables.ConditionRequestSatisfied, Status: metav1.ConditionTrue, Reason: tables.ReasonSatisfied, ObservedGeneration: 1}
	disagree := func(msg string) metav1.Condition {
		return metav1.Condition{Type: tables.ConditionAnnotationsDisagree, Status: metav1.ConditionTrue,
			Reason: tables.ReasonMetalLBAnnotationIgnored, Message: msg, ObservedGeneration: 1}
	}
	svc := func(conds ...metav1.Condition) *tables.Service {
		return &tables.Service{IngressIPs: []netip.Addr{addr}, Conditions: conds}
	}
	tests := []struct {
		name     string
		a        *tables.LBAllocation
		svc      *tables.Service
		want     bool // the condition is wanted
		upToDate bool
	}{
		{"agree, none shown", decision(""), svc(satisfied), false, true},
		{"agree, one left over", decision(""), svc(satisfied, disagree("x")), false, false},
		{"disagree, none shown", decision("x"), svc(satisfied), true, false},
		{"disagree, shown", decision("x"), svc(satisfied, disagree("x")), true, true},
		{"disagree, old message", decision("y"), svc(satisfied, disagree("x")), true, false},
		{"unmanaged drops it", &tables.LBAllocation{Disagreement: "x"}, &tables.Service{Conditions: []metav1.Condition{disagree("x")}}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, ok := desiredDisagreement(tt.a, tt.svc, now)
			if ok != tt.want {
				t.Fatalf("wanted %v, got %v", tt.want, ok)
			}
			if ok && (c.Message != tt.a.Disagreement || c.Reason != tables.ReasonMetalLBAnnotationIgnored || c.Status != metav1.ConditionTrue) {
				t.Errorf("condition %+v", c)
			}
			if got := upToDate(tt.a, tt.svc); got != tt.upToDate {
				t.Errorf("upToDate %v, want %v", got, tt.upToDate)
			}
		})
	}
}
