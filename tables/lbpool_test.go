package tables

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

func TestPoolSelectorErrorsNameFieldAndRule(t *testing.T) {
	for _, tt := range []struct {
		name string
		sel  *metav1.LabelSelector
		want string
	}{
		{"key", &metav1.LabelSelector{MatchLabels: map[string]string{"bad key!": "x"}},
			`spec.serviceSelector.matchLabels: Invalid value: "bad key!": name part must consist of alphanumeric characters`},
		{"value", &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a b c"}},
			`spec.serviceSelector.matchLabels: Invalid value: "a b c": a valid label must be an empty string or consist of alphanumeric characters`},
		{"long value", &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{strings.Repeat("v", 300)}}}},
			`spec.serviceSelector.matchExpressions[0].values[0]: Invalid value: "` + strings.Repeat("v", 300) + `": must be no more than 63 characters`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &v2alpha1.CiliumLoadBalancerIPPool{}
			p.Name = "pool"
			p.Spec.ServiceSelector = tt.sel
			row := LBPoolFromK8s(p)
			if !strings.HasPrefix(row.SelectorError, tt.want) {
				t.Fatalf("SelectorError = %q, want it to start with %q", row.SelectorError, tt.want)
			}
			if row.Selects(&Service{Namespace: "ns", Name: "s", Labels: LabelSetOf(map[string]string{"app": "a b c"})}) {
				t.Fatal("an invalid selector selects a Service")
			}
		})
	}
}

func TestPoolBlockStartAfterStop(t *testing.T) {
	p := &v2alpha1.CiliumLoadBalancerIPPool{}
	p.Name = "pool"
	p.Spec.Blocks = []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{
		{Cidr: "10.0.10.0/24"},
		{Start: "10.0.20.9", Stop: "10.0.20.1"},
	}
	row := LBPoolFromK8s(p)
	want := `spec.blocks[1]: start "10.0.20.9" is after stop "10.0.20.1"`
	if len(row.BlockErrors) != 1 || row.BlockErrors[0] != want {
		t.Fatalf("BlockErrors = %q, want [%q]", row.BlockErrors, want)
	}
	if len(row.Blocks) != 1 || row.Blocks[0].CIDR != "10.0.10.0/24" {
		t.Fatalf("Blocks = %+v, want the valid block kept", row.Blocks)
	}
}

func TestLBPoolSameSpec(t *testing.T) {
	base := func() *v2alpha1.CiliumLoadBalancerIPPool {
		p := &v2alpha1.CiliumLoadBalancerIPPool{}
		p.Name, p.UID, p.ResourceVersion = "p", "uid-1", "1"
		p.Spec.Blocks = []v2alpha1.CiliumLoadBalancerIPPoolIPBlock{{Cidr: "20.0.10.0/24"}}
		p.Spec.ServiceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}
		return p
	}
	for _, tc := range []struct {
		name string
		edit func(*v2alpha1.CiliumLoadBalancerIPPool)
		same bool
	}{
		{"nothing", func(*v2alpha1.CiliumLoadBalancerIPPool) {}, true},
		{"version and status", func(p *v2alpha1.CiliumLoadBalancerIPPool) {
			p.ResourceVersion = "2"
			p.Status.Conditions = []metav1.Condition{{Type: "cilium.io/IPsAvailable", Status: metav1.ConditionTrue}}
		}, true},
		{"uid (deleted and created again)", func(p *v2alpha1.CiliumLoadBalancerIPPool) { p.UID = "uid-2" }, false},
		{"block", func(p *v2alpha1.CiliumLoadBalancerIPPool) { p.Spec.Blocks[0].Cidr = "20.0.11.0/24" }, false},
		{"bad block", func(p *v2alpha1.CiliumLoadBalancerIPPool) {
			p.Spec.Blocks = append(p.Spec.Blocks, v2alpha1.CiliumLoadBalancerIPPoolIPBlock{Cidr: "x"})
		}, false},
		{"selector", func(p *v2alpha1.CiliumLoadBalancerIPPool) { p.Spec.ServiceSelector.MatchLabels["a"] = "c" }, false},
		{"disabled", func(p *v2alpha1.CiliumLoadBalancerIPPool) { p.Spec.Disabled = true }, false},
		{"first and last", func(p *v2alpha1.CiliumLoadBalancerIPPool) {
			p.Spec.AllowFirstLastIPs = v2alpha1.AllowFirstLastIPNo
		}, false},
	} {
		edited := base()
		tc.edit(edited)
		if got := LBPoolFromK8s(base()).SameSpec(LBPoolFromK8s(edited)); got != tc.same {
			t.Errorf("%s: SameSpec = %v, want %v", tc.name, got, tc.same)
		}
	}
}
