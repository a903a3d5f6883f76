package v2alpha1

import (
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// bluePool is the first example of the LB IPAM spec ("Pools"), verbatim
// except for the indentation the spec lost.
const bluePool = `
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "10.0.10.0/24"
  - cidr: "2004::0/64"
  - start: "20.0.20.100"
    stop: "20.0.20.200"
  - start: "1.2.3.4"
`

// selectorPool is the spec's "Service Selectors" example.
const selectorPool = `
apiVersion: "cilium.io/v2alpha1"
kind: CiliumLoadBalancerIPPool
metadata:
  name: "blue-pool"
spec:
  blocks:
  - cidr: "20.0.10.0/24"
  serviceSelector:
    matchExpressions:
    - {key: color, operator: In, values: [blue, cyan]}
`

func decode(t *testing.T, doc string) *CiliumLoadBalancerIPPool {
	t.Helper()
	var p CiliumLoadBalancerIPPool
	if err := yaml.UnmarshalStrict([]byte(doc), &p); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return &p
}

func TestBluePoolRoundTrip(t *testing.T) {
	p := decode(t, bluePool)

	want := CiliumLoadBalancerIPPoolSpec{Blocks: []CiliumLoadBalancerIPPoolIPBlock{
		{Cidr: "10.0.10.0/24"},
		{Cidr: "2004::0/64"},
		{Start: "20.0.20.100", Stop: "20.0.20.200"},
		{Start: "1.2.3.4"},
	}}
	if p.APIVersion != "cilium.io/v2alpha1" || p.Kind != PoolKind || p.Name != "blue-pool" {
		t.Errorf("type/object meta = %+v %+v", p.TypeMeta, p.ObjectMeta)
	}
	if !reflect.DeepEqual(p.Spec, want) {
		t.Errorf("spec = %+v, want %+v", p.Spec, want)
	}

	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	// Unset optional fields must stay off the wire (omitempty), so that the
	// API server applies the CRD defaults, e.g. allowFirstLastIPs: Yes.
	var wire map[string]any
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	spec := wire["spec"].(map[string]any)
	for _, k := range []string{"serviceSelector", "allowFirstLastIPs"} {
		if _, ok := spec[k]; ok {
			t.Errorf("spec.%s is on the wire although unset: %s", k, b)
		}
	}
	if _, ok := wire["status"].(map[string]any)["conditions"]; ok {
		t.Errorf("empty status.conditions on the wire: %s", b)
	}
	gotBlocks, _ := json.Marshal(spec["blocks"])
	const wantBlocks = `[{"cidr":"10.0.10.0/24"},{"cidr":"2004::0/64"},{"start":"20.0.20.100","stop":"20.0.20.200"},{"start":"1.2.3.4"}]`
	if string(gotBlocks) != wantBlocks {
		t.Errorf("blocks on the wire = %s, want %s", gotBlocks, wantBlocks)
	}

	var back CiliumLoadBalancerIPPool
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, p) {
		t.Errorf("round trip changed the pool:\n got %+v\nwant %+v", &back, p)
	}
}

func TestSelectorPoolDecodes(t *testing.T) {
	p := decode(t, selectorPool)
	want := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "color", Operator: metav1.LabelSelectorOpIn, Values: []string{"blue", "cyan"}},
	}}
	if !reflect.DeepEqual(p.Spec.ServiceSelector, want) {
		t.Errorf("serviceSelector = %+v, want %+v", p.Spec.ServiceSelector, want)
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	orig := decode(t, selectorPool)
	orig.Spec.ServiceSelector.MatchLabels = map[string]string{"color": "red"}
	orig.Status.Conditions = []metav1.Condition{{Type: "cilium.io/IPsAvailable", Message: "254"}}
	snapshot := decode(t, selectorPool)
	snapshot.Spec.ServiceSelector.MatchLabels = map[string]string{"color": "red"}
	snapshot.Status.Conditions = []metav1.Condition{{Type: "cilium.io/IPsAvailable", Message: "254"}}

	cp := orig.DeepCopy()
	if !reflect.DeepEqual(cp, orig) {
		t.Fatalf("copy differs from original")
	}
	// Mutate everything reachable through a pointer, slice or map.
	cp.Name = "other"
	cp.Spec.Blocks[0].Cidr = "192.0.2.0/24"
	cp.Spec.Blocks = append(cp.Spec.Blocks, CiliumLoadBalancerIPPoolIPBlock{Start: "192.0.2.1"})
	cp.Spec.ServiceSelector.MatchLabels["color"] = "green"
	cp.Spec.ServiceSelector.MatchExpressions[0].Values[0] = "green"
	cp.Status.Conditions[0].Message = "0"
	if !reflect.DeepEqual(orig, snapshot) {
		t.Errorf("mutating the copy changed the original: %+v", orig)
	}

	obj := orig.DeepCopyObject()
	if _, ok := obj.(*CiliumLoadBalancerIPPool); !ok {
		t.Errorf("DeepCopyObject returned %T", obj)
	}
	list := &CiliumLoadBalancerIPPoolList{Items: []CiliumLoadBalancerIPPool{*orig}}
	lcp := list.DeepCopyObject().(*CiliumLoadBalancerIPPoolList)
	lcp.Items[0].Spec.Blocks[0].Cidr = "192.0.2.0/24"
	if list.Items[0].Spec.Blocks[0].Cidr != "20.0.10.0/24" {
		t.Errorf("mutating the list copy changed the original")
	}
}

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gvks, _, err := s.ObjectKinds(&CiliumLoadBalancerIPPool{})
	if err != nil {
		t.Fatal(err)
	}
	if want := SchemeGroupVersion.WithKind(PoolKind); len(gvks) != 1 || gvks[0] != want {
		t.Errorf("kinds = %v, want %v", gvks, want)
	}
	if got := Resource(PoolPlural).String(); got != PoolCRDName {
		t.Errorf("Resource(%q) = %q, want %q", PoolPlural, got, PoolCRDName)
	}
}
