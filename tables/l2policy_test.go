package tables

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

func TestL2PolicyFromK8s(t *testing.T) {
	svc := &Service{Namespace: "default", Name: "deathstar", Labels: LabelSetOf(map[string]string{"color": "blue"})}
	tests := []struct {
		name                         string
		spec                         v2alpha1.CiliumL2AnnouncementPolicySpec
		wantSvcErr, wantNode, wantIf string
		selectsSvc, selectsNode      bool
		matchesEth0, matchesEnp0s3   bool
	}{
		{
			name:       "empty policy selects everything",
			selectsSvc: true, selectsNode: true, matchesEth0: true, matchesEnp0s3: true,
		},
		{
			name: "spec example: empty NotIn values",
			spec: v2alpha1.CiliumL2AnnouncementPolicySpec{ServiceSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "something", Operator: metav1.LabelSelectorOpNotIn}},
			}},
			wantSvcErr: "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
		},
		{
			name: "node selector DoesNotExist, interfaces regex",
			spec: v2alpha1.CiliumL2AnnouncementPolicySpec{
				ServiceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"color": "blue"}},
				NodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: "node-role.kubernetes.io/control-plane", Operator: metav1.LabelSelectorOpDoesNotExist}}},
				Interfaces: []string{"^eth[0-9]+"},
			},
			selectsSvc: true, selectsNode: true, matchesEth0: true,
		},
		{
			name: "special key selects by namespace",
			spec: v2alpha1.CiliumL2AnnouncementPolicySpec{
				ServiceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelServiceNamespace: "other"}},
			},
			selectsNode: true, matchesEth0: true, matchesEnp0s3: true,
		},
		{
			name:   "bad regex",
			spec:   v2alpha1.CiliumL2AnnouncementPolicySpec{Interfaces: []string{"eth[0-"}},
			wantIf: "error parsing regexp: missing closing ]: `[0-`",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &v2alpha1.CiliumL2AnnouncementPolicy{Spec: tt.spec}
			p.Name = "policy1"
			row := L2PolicyFromK8s(p)
			if row.ServiceSelectorError != tt.wantSvcErr || row.NodeSelectorError != tt.wantNode || row.InterfaceError != tt.wantIf {
				t.Fatalf("errors: svc %q node %q if %q", row.ServiceSelectorError, row.NodeSelectorError, row.InterfaceError)
			}
			if got := row.SelectsService(svc); got != tt.selectsSvc {
				t.Errorf("SelectsService = %v", got)
			}
			if got := row.SelectsNode(map[string]string{"kubernetes.io/hostname": "worker"}); got != tt.selectsNode {
				t.Errorf("SelectsNode = %v", got)
			}
			if got := row.MatchesInterface("eth0"); got != tt.matchesEth0 {
				t.Errorf("eth0: %v", got)
			}
			if got := row.MatchesInterface("enp0s3"); got != tt.matchesEnp0s3 {
				t.Errorf("enp0s3: %v", got)
			}
		})
	}
}
