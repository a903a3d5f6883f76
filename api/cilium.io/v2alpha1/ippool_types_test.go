package v2alpha1

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// greenPool is the multi-pool spec's example, verbatim except for the
// indentation the spec lost.
const greenPool = `
apiVersion: cilium.io/v2alpha1
kind: CiliumPodIPPool
metadata:
  name: green-pool
spec:
  ipv4:
    cidrs:
      - 10.20.0.0/16
      - 10.30.0.0/16
    maskSize: 24
  ipv6:
    cidrs:
      - fd00::/104
    maskSize: 120
`

func TestGreenPoolRoundTrip(t *testing.T) {
	var p CiliumPodIPPool
	if err := yaml.UnmarshalStrict([]byte(greenPool), &p); err != nil {
		t.Fatalf("decode: %v", err)
	}
	want := IPPoolSpec{
		IPv4: &IPv4PoolSpec{CIDRs: []PoolCIDR{"10.20.0.0/16", "10.30.0.0/16"}, MaskSize: 24},
		IPv6: &IPv6PoolSpec{CIDRs: []PoolCIDR{"fd00::/104"}, MaskSize: 120},
	}
	if p.Kind != PodIPPoolKind || p.Name != "green-pool" || !reflect.DeepEqual(p.Spec, want) {
		t.Errorf("decoded %+v %+v, want green-pool %+v", p.TypeMeta, p.Spec, want)
	}

	b, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	if err := json.Unmarshal(b, &wire); err != nil {
		t.Fatal(err)
	}
	gotSpec, _ := json.Marshal(wire["spec"])
	const wantSpec = `{"ipv4":{"cidrs":["10.20.0.0/16","10.30.0.0/16"],"maskSize":24},"ipv6":{"cidrs":["fd00::/104"],"maskSize":120}}`
	if string(gotSpec) != wantSpec {
		t.Errorf("spec on the wire = %s, want %s", gotSpec, wantSpec)
	}
	// An empty status stays off the wire but for {} (status is no pointer).
	if st, _ := json.Marshal(wire["status"]); string(st) != "{}" {
		t.Errorf("empty status on the wire = %s, want {}", st)
	}
}

// The family counts are written even when zero, so that the printer columns
// show 0; cidrsTotal is a decimal string as it can exceed int64.
func TestPoolStatusWire(t *testing.T) {
	s := CiliumPodIPPoolStatus{
		IPv4: &PoolFamilyStatus{CIDRsTotal: "512"},
		IPv6: &PoolFamilyStatus{CIDRsAllocated: 1, CIDRsTotal: "340282366920938463463374607431768211456", AddressesInUse: 3, Nodes: 1},
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"ipv4":{"cidrsAllocated":0,"cidrsTotal":"512","addressesInUse":0,"nodes":0},` +
		`"ipv6":{"cidrsAllocated":1,"cidrsTotal":"340282366920938463463374607431768211456","addressesInUse":3,"nodes":1}}`
	if string(b) != want {
		t.Errorf("status on the wire = %s, want %s", b, want)
	}
}

func TestPodIPPoolDeepCopyIsIndependent(t *testing.T) {
	var orig CiliumPodIPPool
	if err := yaml.UnmarshalStrict([]byte(greenPool), &orig); err != nil {
		t.Fatal(err)
	}
	orig.Status.IPv4 = &PoolFamilyStatus{CIDRsTotal: "512"}
	snapshot := orig.DeepCopy()

	cp := orig.DeepCopy()
	cp.Spec.IPv4.CIDRs[0] = "192.0.2.0/24"
	cp.Spec.IPv6.MaskSize = 112
	cp.Status.IPv4.CIDRsTotal = "0"
	if !reflect.DeepEqual(&orig, snapshot) {
		t.Errorf("mutating the copy changed the original: %+v", orig)
	}
	list := &CiliumPodIPPoolList{Items: []CiliumPodIPPool{orig}}
	if _, ok := list.DeepCopyObject().(*CiliumPodIPPoolList); !ok {
		t.Errorf("DeepCopyObject of the list returned %T", list.DeepCopyObject())
	}
}

func TestPodIPPoolInScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	for obj, kind := range map[runtime.Object]string{&CiliumPodIPPool{}: PodIPPoolKind, &CiliumPodIPPoolList{}: PodIPPoolKind + "List"} {
		gvks, _, err := s.ObjectKinds(obj)
		if err != nil {
			t.Fatal(err)
		}
		if want := SchemeGroupVersion.WithKind(kind); len(gvks) != 1 || gvks[0] != want {
			t.Errorf("kinds = %v, want %v", gvks, want)
		}
	}
	if got := Resource(PodIPPoolPlural).String(); got != PodIPPoolCRDName {
		t.Errorf("Resource(%q) = %q, want %q", PodIPPoolPlural, got, PodIPPoolCRDName)
	}
}
