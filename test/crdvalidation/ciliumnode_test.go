package crdvalidation

import (
	"context"
	"reflect"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	ciliumv2 "github.com/heraldlb/herald/api/cilium.io/v2"
	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

func nodesGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: ciliumv2.GroupName, Version: ciliumv2.Version, Resource: ciliumv2.NodePlural}
}

// ciliumNode is the multi-pool part of a CiliumNode in Cilium's shape: an
// agent's requests per pool, the CIDRs allocated to the node (both families
// in one list, as Cilium's operator writes them).
const ciliumNode = `
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
      - pool: green-pool
        needed:
          ipv4-addrs: 8
      allocated:
      - pool: default
        cidrs:
        - 10.10.1.0/24
        - fd00:10:1::/112
      - pool: green-pool
        cidrs:
        - 10.20.3.0/24
`

// ciliumNodeStatus is the status the node's agent and the allocator write.
const ciliumNodeStatus = `
ipam:
  used:
    10.10.1.7:
      owner: default/nginx-default-79885c7f58-fdfgf
      resource: default
    fd00:10:1::7:
      owner: default/nginx-default-79885c7f58-fdfgf
      resource: default
    10.20.3.12:
      owner: cilium-test/client-6f6788d7cc-7fw9w
      resource: green-pool
  operator-status:
    error: 'pool green-pool: no CIDR of /24 left for IPv4'
`

func TestCiliumNode(t *testing.T) {
	ctx := context.Background()
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(ciliumNode), &obj.Object); err != nil {
		t.Fatal(err)
	}
	created, err := dyn.Resource(nodesGVR()).Create(ctx, &obj, metav1.CreateOptions{FieldValidation: "Strict"})
	if err != nil {
		t.Fatalf("creating worker-1: %v", err)
	}
	nodes := clientset.CiliumV2().CiliumNodes()
	t.Cleanup(func() { _ = nodes.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}) })

	// The status goes through the status subresource, as the agent writes it.
	var status map[string]any
	if err := yaml.Unmarshal([]byte(ciliumNodeStatus), &status); err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = status
	if _, err := dyn.Resource(nodesGVR()).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}

	got, err := nodes.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantSpec := ciliumv2.NodeSpec{IPAM: ciliumv2.IPAMSpec{Pools: ciliumv2.IPAMPoolSpec{
		Requested: []ciliumv2.IPAMPoolRequest{
			{Pool: "default", Needed: ciliumv2.IPAMPoolDemand{IPv4Addrs: 16, IPv6Addrs: 16}},
			{Pool: "green-pool", Needed: ciliumv2.IPAMPoolDemand{IPv4Addrs: 8}},
		},
		Allocated: []ciliumv2.IPAMPoolAllocation{
			{Pool: "default", CIDRs: []ciliumv2.IPAMPodCIDR{"10.10.1.0/24", "fd00:10:1::/112"}},
			{Pool: "green-pool", CIDRs: []ciliumv2.IPAMPodCIDR{"10.20.3.0/24"}},
		},
	}}}
	if !reflect.DeepEqual(got.Spec, wantSpec) {
		t.Errorf("spec = %+v, want %+v", got.Spec, wantSpec)
	}
	wantStatus := ciliumv2.NodeStatus{IPAM: ciliumv2.IPAMStatus{
		Used: ciliumv2.AllocationMap{
			"10.10.1.7":    {Owner: "default/nginx-default-79885c7f58-fdfgf", Resource: "default"},
			"fd00:10:1::7": {Owner: "default/nginx-default-79885c7f58-fdfgf", Resource: "default"},
			"10.20.3.12":   {Owner: "cilium-test/client-6f6788d7cc-7fw9w", Resource: "green-pool"},
		},
		OperatorStatus: ciliumv2.OperatorStatus{Error: "pool green-pool: no CIDR of /24 left for IPv4"},
	}}
	if !reflect.DeepEqual(got.Status, wantStatus) {
		t.Errorf("status = %+v, want %+v", got.Status, wantStatus)
	}

	// A spec update through the typed client leaves the status alone.
	got.Spec.IPAM.Pools.Requested[1].Needed.IPv4Addrs = 24
	got.Status = ciliumv2.NodeStatus{}
	updated, err := nodes.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(updated.Status, wantStatus) {
		t.Errorf("status after a spec update = %+v, want %+v", updated.Status, wantStatus)
	}

	table := getTable(t, ciliumv2.GroupName, ciliumv2.Version, ciliumv2.NodePlural, obj.GetName())
	if cols, want := columnNames(table), []string{"Name", "Operator Error", "Age"}; !reflect.DeepEqual(cols, want) {
		t.Fatalf("columns = %q, want %q", cols, want)
	}
	// kubectl shows columns of priority 1 only with -o wide.
	if p := table.ColumnDefinitions[1].Priority; p != 1 {
		t.Errorf("Operator Error has priority %d, want 1", p)
	}
	if len(table.Rows) != 1 || len(table.Rows[0].Cells) != 3 {
		t.Fatalf("rows = %+v", table.Rows)
	}
	if cells, want := table.Rows[0].Cells[:2], []any{"worker-1", "pool green-pool: no CIDR of /24 left for IPv4"}; !reflect.DeepEqual(cells, want) {
		t.Errorf("cells = %#v, want %#v", cells, want)
	}
}

var rejectedCiliumNodes = []struct {
	name string
	spec ciliumv2.IPAMPoolSpec
	want []string
}{
	{"requested-no-pool", ciliumv2.IPAMPoolSpec{Requested: []ciliumv2.IPAMPoolRequest{{Needed: ciliumv2.IPAMPoolDemand{IPv4Addrs: 8}}}},
		[]string{"spec.ipam.pools.requested[0].pool", "should be at least 1 chars long"}},
	{"requested-negative", ciliumv2.IPAMPoolSpec{Requested: []ciliumv2.IPAMPoolRequest{{Pool: "default", Needed: ciliumv2.IPAMPoolDemand{IPv6Addrs: -1}}}},
		[]string{"spec.ipam.pools.requested[0].needed.ipv6-addrs", "should be greater than or equal to 0"}},
	{"allocated-no-pool", ciliumv2.IPAMPoolSpec{Allocated: []ciliumv2.IPAMPoolAllocation{{CIDRs: []ciliumv2.IPAMPodCIDR{"10.20.3.0/24"}}}},
		[]string{"spec.ipam.pools.allocated[0].pool", "should be at least 1 chars long"}},
	{"allocated-bad-cidr", ciliumv2.IPAMPoolSpec{Allocated: []ciliumv2.IPAMPoolAllocation{{Pool: "default", CIDRs: []ciliumv2.IPAMPodCIDR{"10.20.3.0/24", "10.20.4.0"}}}},
		[]string{"spec.ipam.pools.allocated[0].cidrs[1]", "must be of type cidr"}},
}

func TestInvalidCiliumNodesAreRejected(t *testing.T) {
	nodes := clientset.CiliumV2().CiliumNodes()
	for _, tc := range rejectedCiliumNodes {
		t.Run(tc.name, func(t *testing.T) {
			n := &ciliumv2.CiliumNode{ObjectMeta: metav1.ObjectMeta{Name: tc.name}}
			n.Spec.IPAM.Pools = tc.spec
			err := createRejected(t, nodes, tc.name, n, tc.want)
			checkOneInvalid(t, err, tc.want)
		})
	}
}

// TestDiscovery checks the names kubectl resolves: short names, the cilium
// category (kubectl get cilium), cluster scope and the status subresource.
func TestDiscovery(t *testing.T) {
	for _, tc := range []struct {
		gv, resource, kind string
		shortNames         []string
	}{
		{v2alpha1.SchemeGroupVersion.String(), v2alpha1.PodIPPoolPlural, v2alpha1.PodIPPoolKind, []string{"cpip"}},
		{ciliumv2.SchemeGroupVersion.String(), ciliumv2.NodePlural, ciliumv2.NodeKind, []string{"cn", "ciliumn"}},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			list, err := testCluster.Client.Discovery().ServerResourcesForGroupVersion(tc.gv)
			if err != nil {
				t.Fatal(err)
			}
			var found, status bool
			for _, r := range list.APIResources {
				switch r.Name {
				case tc.resource:
					found = true
					if r.Kind != tc.kind || r.Namespaced || !reflect.DeepEqual(r.ShortNames, tc.shortNames) || !slices.Contains(r.Categories, "cilium") {
						t.Errorf("%s: kind %s, namespaced %v, short names %q, categories %q; want %s, cluster-scoped, %q, cilium",
							r.Name, r.Kind, r.Namespaced, r.ShortNames, r.Categories, tc.kind, tc.shortNames)
					}
				case tc.resource + "/status":
					status = true
				}
			}
			if !found || !status {
				t.Errorf("%s in %s: resource %v, status subresource %v", tc.resource, tc.gv, found, status)
			}
		})
	}
}
