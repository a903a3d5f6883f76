package v2

import (
	"encoding/json"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// node has every field Herald keeps of Cilium's CiliumNode, with Cilium's
// JSON names (ipv4-addrs, operator-status, ...).
const node = `
apiVersion: cilium.io/v2
kind: CiliumNode
metadata:
  name: worker-1
spec:
  ipam:
    pools:
      requested:
      - pool: default
        needed:
          ipv4-addrs: 16
          ipv6-addrs: 16
      allocated:
      - pool: default
        cidrs:
        - 10.10.1.0/24
        - fd00:10:1::/112
status:
  ipam:
    used:
      10.10.1.7:
        owner: default/nginx
        resource: default
    operator-status:
      error: no CIDR left
`

func decode(t *testing.T) *CiliumNode {
	t.Helper()
	var n CiliumNode
	if err := yaml.UnmarshalStrict([]byte(node), &n); err != nil {
		t.Fatalf("decode: %v", err)
	}
	return &n
}

func TestNodeRoundTrip(t *testing.T) {
	n := decode(t)
	want := CiliumNode{
		Spec: NodeSpec{IPAM: IPAMSpec{Pools: IPAMPoolSpec{
			Requested: []IPAMPoolRequest{{Pool: "default", Needed: IPAMPoolDemand{IPv4Addrs: 16, IPv6Addrs: 16}}},
			Allocated: []IPAMPoolAllocation{{Pool: "default", CIDRs: []IPAMPodCIDR{"10.10.1.0/24", "fd00:10:1::/112"}}},
		}}},
		Status: NodeStatus{IPAM: IPAMStatus{
			Used:           AllocationMap{"10.10.1.7": {Owner: "default/nginx", Resource: "default"}},
			OperatorStatus: OperatorStatus{Error: "no CIDR left"},
		}},
	}
	if n.Kind != NodeKind || n.Name != "worker-1" || !reflect.DeepEqual(n.Spec, want.Spec) || !reflect.DeepEqual(n.Status, want.Status) {
		t.Errorf("decoded %+v %+v %+v", n.TypeMeta, n.Spec, n.Status)
	}

	b, err := json.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	var back CiliumNode
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, n) {
		t.Errorf("round trip changed the node:\n got %+v\nwant %+v", &back, n)
	}

	// A node that has asked for nothing yet has only empty objects on the
	// wire, no null lists.
	empty, err := json.Marshal(&CiliumNode{})
	if err != nil {
		t.Fatal(err)
	}
	var wire map[string]any
	if err := json.Unmarshal(empty, &wire); err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"spec", "status"} {
		got, _ := json.Marshal(wire[part])
		if want := `{"ipam":{` + map[string]string{"spec": `"pools":{}`, "status": `"operator-status":{}`}[part] + `}}`; string(got) != want {
			t.Errorf("empty %s on the wire = %s, want %s", part, got, want)
		}
	}
}

func TestNodeDeepCopyIsIndependent(t *testing.T) {
	orig := decode(t)
	snapshot := decode(t)
	cp := orig.DeepCopy()
	cp.Spec.IPAM.Pools.Requested[0].Needed.IPv4Addrs = 1
	cp.Spec.IPAM.Pools.Allocated[0].CIDRs[0] = "192.0.2.0/24"
	cp.Status.IPAM.Used["10.10.1.8"] = AllocationIP{Owner: "default/other"}
	if !reflect.DeepEqual(orig, snapshot) {
		t.Errorf("mutating the copy changed the original: %+v", orig)
	}
	list := &CiliumNodeList{Items: []CiliumNode{*orig}}
	if _, ok := list.DeepCopyObject().(*CiliumNodeList); !ok {
		t.Errorf("DeepCopyObject of the list returned %T", list.DeepCopyObject())
	}
}

func TestAddToScheme(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	gvks, _, err := s.ObjectKinds(&CiliumNode{})
	if err != nil {
		t.Fatal(err)
	}
	if want := SchemeGroupVersion.WithKind(NodeKind); len(gvks) != 1 || gvks[0] != want {
		t.Errorf("kinds = %v, want %v", gvks, want)
	}
	if got := Resource(NodePlural).String(); got != NodeCRDName {
		t.Errorf("Resource(%q) = %q, want %q", NodePlural, got, NodeCRDName)
	}
}
