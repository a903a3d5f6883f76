package multipool

import (
	"context"
	"fmt"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
	"github.com/heraldlb/herald/tables"
)

// TestInvalidSpecCondition: Herald's CRD refuses a pool whose CIDR does not
// parse or is smaller than its maskSize, but a pool stored before those
// rules applied (created under Cilium's CRD, which has none, before
// Herald's replaced it) keeps its spec. The allocator gives it the
// InvalidSpec condition and a Warning Event naming each bad CIDR. The test
// stores one by taking the rules out of the CRD for a moment.
func TestInvalidSpecCondition(t *testing.T) {
	logAgentsOnFailure(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	bad := &v2alpha1.CiliumPodIPPool{
		ObjectMeta: metav1.ObjectMeta{Name: "invalid"},
		Spec: v2alpha1.IPPoolSpec{IPv4: &v2alpha1.IPv4PoolSpec{
			CIDRs: []v2alpha1.PoolCIDR{"198.18.120.0/24", "198.18.121.0/33"}, MaskSize: 20,
		}},
	}
	pools := herald.CiliumV2alpha1().CiliumPodIPPools()
	if _, err := pools.Create(ctx, bad, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsInvalid(err) {
		t.Fatalf("creating a pool with a CIDR smaller than its maskSize and one that does not parse: %v, want Invalid", err)
	}

	crds, err := apiextensions.NewForConfig(testCluster.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	api := crds.ApiextensionsV1().CustomResourceDefinitions()
	const crdName = v2alpha1.PodIPPoolPlural + ".cilium.io"
	orig, err := api.Get(ctx, crdName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setSchema := func(strip bool) {
		t.Helper()
		waitFor(t, timeout, func() (bool, string) {
			crd, err := api.Get(ctx, crdName, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			crd.Spec = *orig.Spec.DeepCopy()
			if strip {
				for i := range crd.Spec.Versions {
					stripValidations(crd.Spec.Versions[i].Schema.OpenAPIV3Schema)
				}
			}
			_, err = api.Update(ctx, crd, metav1.UpdateOptions{})
			return err == nil, fmt.Sprintf("updating CRD %s: %v", crdName, err)
		})
	}
	setSchema(true)
	restored := false
	defer func() {
		if !restored {
			setSchema(false)
		}
	}()
	// The API server takes the new schema up shortly after the update.
	waitFor(t, timeout, func() (bool, string) {
		_, err := pools.Create(ctx, bad, metav1.CreateOptions{})
		return err == nil, fmt.Sprintf("creating pool %s without the CRD's rules: %v", bad.Name, err)
	})
	defer func() {
		if err := pools.Delete(context.Background(), bad.Name, metav1.DeleteOptions{}); err != nil {
			t.Error(err)
		}
	}()
	setSchema(false)
	restored = true
	waitFor(t, timeout, func() (bool, string) {
		probe := bad.DeepCopy()
		probe.Name = "invalid-probe"
		_, err := pools.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsInvalid(err), fmt.Sprintf("the CRD's rules are not back yet (dry-run create: %v)", err)
	})

	// The stored pool keeps its spec; the allocator says what is wrong.
	waitPoolCondition(t, bad.Name, tables.ConditionPodPoolInvalidSpec, metav1.ConditionTrue, "spec.ipv4.cidrs[0]: 198.18.120.0/24 is smaller than the maskSize /20")
	waitPoolCondition(t, bad.Name, tables.ConditionPodPoolInvalidSpec, metav1.ConditionTrue, "spec.ipv4.cidrs[1]")
	waitEvent(t, "", "CiliumPodIPPool", bad.Name, tables.ReasonError, "198.18.121.0/33")
}

// stripValidations removes every x-kubernetes-validations rule from a
// schema, as Cilium's own CRD has none.
func stripValidations(s *apiextensionsv1.JSONSchemaProps) {
	if s == nil {
		return
	}
	s.XValidations = nil
	for k, p := range s.Properties {
		stripValidations(&p)
		s.Properties[k] = p
	}
	if s.Items != nil {
		stripValidations(s.Items.Schema)
	}
}
