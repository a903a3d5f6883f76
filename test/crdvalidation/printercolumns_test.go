package crdvalidation

import (
	"context"
	"reflect"
	"sort"
	"testing"

	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

// printedPool is the blue pool with the status the allocator writes; the
// message of IPsAvailable is what the IPS AVAILABLE column shows.
const printedPool = `
apiVersion: cilium.io/v2
kind: CiliumLoadBalancerIPPool
metadata:
  name: printed-pool
spec:
  blocks:
  - cidr: "10.0.10.0/24"
  - cidr: "2004::0/64"
  - start: "20.0.20.100"
    stop: "20.0.20.200"
  - start: "1.2.3.4"
status:
  conditions:
  - type: cilium.io/PoolConflict
    status: "False"
    reason: resolved
    message: ""
    lastTransitionTime: "2026-01-02T03:04:05Z"
  - type: cilium.io/IPsAvailable
    status: Unknown
    reason: noreason
    message: "65788"
    lastTransitionTime: "2026-01-02T03:04:05Z"
`

// printed lists every resource that install/crds serves as both
// cilium.io/v2alpha1 and cilium.io/v2 (hack/crd-versions), with the columns
// `kubectl get` prints for it, which must not change between versions or
// releases, and the cells of one object, all but the last (AGE, the
// object's age).
var printed = []struct {
	plural  string
	doc     string // created as written; its status, if any, then written through the status subresource
	columns []string
	cells   []any
}{
	// kubectl upper-cases the names: NAME DISABLED CONFLICTING IPS AVAILABLE AGE.
	{v2alpha1.PoolPlural, printedPool,
		[]string{"Name", "Disabled", "Conflicting", "IPs Available", "Age"},
		[]any{"printed-pool", false, "False", "65788"}},
	// One value per column: the first peer's, in the status's order.
	{v2alpha1.BGPNodeConfigPlural, bgpNodeConfig,
		[]string{"Name", "Peer", "State", "Age"},
		[]any{"bgpv2-cplane-dev-multi-homing-worker", "fd00:10:0:1::1", "established"}},
	{v2alpha1.BGPClusterConfigPlural, bgpClusterConfig, []string{"Name", "Age"}, []any{"cilium-bgp"}},
	{v2alpha1.BGPPeerConfigPlural, bgpPeerConfig, []string{"Name", "Age"}, []any{"cilium-peer"}},
	{v2alpha1.BGPAdvertisementPlural, bgpAdvertisements, []string{"Name", "Age"}, []any{"bgp-advertisements"}},
	{v2alpha1.BGPNodeConfigOverridePlural, bgpNodeConfigOverride, []string{"Name", "Age"}, []any{"bgpv2-cplane-dev-multi-homing-worker"}},
}

// TestPrinterColumns checks what `kubectl get` prints under each served
// version: kubectl asks the API server for a Table, whose columns come from
// the served version's additionalPrinterColumns.
func TestPrinterColumns(t *testing.T) {
	for _, p := range printed {
		t.Run(p.plural, func(t *testing.T) {
			name := createWithStatus(t, p.plural, p.doc)
			for _, version := range servedVersions {
				t.Run(version, func(t *testing.T) {
					cols, cells := tableRow(t, version, p.plural, name)
					if !reflect.DeepEqual(cols, p.columns) {
						t.Errorf("columns = %q, want %q", cols, p.columns)
					}
					if len(cells) != len(p.columns) {
						t.Fatalf("cells = %#v, want %d", cells, len(p.columns))
					}
					if got := cells[:len(cells)-1]; !reflect.DeepEqual(got, p.cells) {
						t.Errorf("cells = %#v, want %#v", got, p.cells)
					}
				})
			}
		})
	}
}

// TestPrinterColumnsCoverEveryV2Copy makes TestPrinterColumns follow
// hack/crd-versions: a CRD that gains a served cilium.io/v2 copy must have
// its columns checked too.
func TestPrinterColumnsCoverEveryV2Copy(t *testing.T) {
	ext, err := apiextensions.NewForConfig(testCluster.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	list, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var both, tested []string
	for _, crd := range list.Items {
		served := map[string]bool{}
		for _, v := range crd.Spec.Versions {
			served[v.Name] = v.Served
		}
		if crd.Spec.Group == v2alpha1.GroupName && served["v2alpha1"] && served["v2"] {
			both = append(both, crd.Spec.Names.Plural)
		}
	}
	for _, p := range printed {
		tested = append(tested, p.plural)
	}
	sort.Strings(both)
	sort.Strings(tested)
	if !reflect.DeepEqual(both, tested) {
		t.Errorf("served as v2alpha1 and v2: %q; columns checked for %q", both, tested)
	}
}

// createWithStatus creates doc as written (its apiVersion), then writes its
// status, which a create drops, through the status subresource; it returns
// the object's name and deletes the object when the test ends.
func createWithStatus(t *testing.T, plural, doc string) string {
	t.Helper()
	ctx := context.Background()
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatal(err)
	}
	status, hasStatus := obj.Object["status"]
	r := dyn.Resource(bgpGVRAt(obj.GroupVersionKind().Version, plural))
	created, err := r.Create(ctx, &obj, metav1.CreateOptions{FieldValidation: "Strict"})
	if err != nil {
		t.Fatalf("creating %s %s: %v", plural, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = r.Delete(context.Background(), obj.GetName(), metav1.DeleteOptions{}) })
	if hasStatus {
		created.Object["status"] = status
		if _, err := r.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("writing the status of %s %s: %v", plural, obj.GetName(), err)
		}
	}
	return obj.GetName()
}

// tableRow gets one object as `kubectl get` does, as a server-side Table,
// and returns its column names and its only row. A column that kubectl
// shows only with -o wide (priority above 0) is named with a " (wide)"
// suffix.
func tableRow(t *testing.T, version, plural, name string) ([]string, []any) {
	t.Helper()
	var table metav1.Table
	err := clientset.CiliumV2alpha1().RESTClient().Get().
		AbsPath("/apis", v2alpha1.GroupName, version, plural, name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		Do(context.Background()).Into(&table)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		if c.Priority > 0 {
			c.Name += " (wide)"
		}
		cols = append(cols, c.Name)
	}
	if len(table.Rows) != 1 {
		t.Fatalf("rows = %+v, want one", table.Rows)
	}
	return cols, table.Rows[0].Cells
}
