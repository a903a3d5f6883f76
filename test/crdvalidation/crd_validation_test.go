package crdvalidation

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

type (
	spec  = v2alpha1.CiliumLoadBalancerIPPoolSpec
	block = v2alpha1.CiliumLoadBalancerIPPoolIPBlock
)

func cidr(c string) block          { return block{Cidr: c} }
func rng(start, stop string) block { return block{Start: start, Stop: stop} }
func blocks(bs ...block) spec      { return spec{Blocks: bs} }

func selector(op metav1.LabelSelectorOperator, values ...string) spec {
	s := blocks(cidr("20.0.10.0/24"))
	s.ServiceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "color", Operator: op, Values: values},
	}}
	return s
}

// bluePool is the spec's first example (see the "Pools" section).
var bluePool = blocks(
	cidr("10.0.10.0/24"),
	cidr("2004::0/64"),
	rng("20.0.20.100", "20.0.20.200"),
	rng("1.2.3.4", ""),
)

var acceptedCases = []struct {
	name string
	spec spec
}{
	{"blue-pool", bluePool},
	{"single-ip", blocks(rng("1.2.3.4", ""))},
	{"range-of-one", blocks(rng("20.0.20.100", "20.0.20.100"))},
	{"range-across-octets", blocks(rng("10.0.0.255", "10.0.1.0"))},
	{"range-whole-ipv4", blocks(rng("0.0.0.0", "255.255.255.255"))},
	{"range-ipv6", blocks(rng("2001:db8::1", "2001:db8::5"))},
	{"range-ipv6-bit-15", blocks(rng("2001:db8::7fff", "2001:db8::8000"))},
	{"cidr-host-bits-set", blocks(cidr("10.0.10.1/24"))},
	{"selector-in", selector(metav1.LabelSelectorOpIn, "blue", "cyan")},
	{"selector-exists", selector(metav1.LabelSelectorOpExists)},
	{"selector-match-labels", spec{
		Blocks:          []block{cidr("20.0.10.0/24")},
		ServiceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"io.kubernetes.service.namespace": "tenant-a"}},
	}},
	{"disabled-no-first-last", spec{
		Blocks:            []block{cidr("20.0.10.0/24")},
		AllowFirstLastIPs: v2alpha1.AllowFirstLastIPNo,
		Disabled:          true,
	}},
}

func TestValidPoolsAreAccepted(t *testing.T) {
	pools := clientset.CiliumV2alpha1().CiliumLoadBalancerIPPools()
	for _, tc := range acceptedCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			got, err := pools.Create(ctx, pool(tc.name, tc.spec), metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			t.Cleanup(func() { _ = pools.Delete(ctx, tc.name, metav1.DeleteOptions{}) })

			want := tc.spec
			if want.AllowFirstLastIPs == "" {
				want.AllowFirstLastIPs = v2alpha1.AllowFirstLastIPYes // CRD default
			}
			if !reflect.DeepEqual(got.Spec, want) {
				t.Errorf("stored spec = %+v, want %+v", got.Spec, want)
			}
		})
	}
}

// rejectedCases each hold one mistake; want are substrings of the API
// server's error: the field path and the rule's message.
var rejectedCases = []struct {
	name string
	spec spec
	want []string
}{
	{"cidr-prefix-too-long", blocks(cidr("10.0.10.0/33")),
		[]string{"spec.blocks[0].cidr", "cidr must be a valid IPv4 or IPv6 CIDR"}},
	{"cidr-not-a-cidr", blocks(cidr("hello")),
		[]string{"spec.blocks[0].cidr", "cidr must be a valid IPv4 or IPv6 CIDR"}},
	{"cidr-without-prefix", blocks(cidr("10.0.10.0")),
		[]string{"spec.blocks[0].cidr", "cidr must be a valid IPv4 or IPv6 CIDR"}},
	{"start-not-an-ip", blocks(rng("20.0.20", "")),
		[]string{"spec.blocks[0].start", "start must be a valid IPv4 or IPv6 address"}},
	{"stop-not-an-ip", blocks(rng("20.0.20.1", "20.0.20.x")),
		[]string{"spec.blocks[0].stop", "stop must be a valid IPv4 or IPv6 address"}},
	{"range-reversed", blocks(rng("20.0.20.200", "20.0.20.100")),
		[]string{"spec.blocks[0]", "start must not be after stop"}},
	{"range-reversed-first-bit", blocks(rng("128.0.0.0", "127.255.255.255")),
		[]string{"spec.blocks[0]", "start must not be after stop"}},
	{"range-reversed-ipv6", blocks(rng("2001:db8::5", "2001:db8::1")),
		[]string{"spec.blocks[0]", "start must not be after stop"}},
	{"range-reversed-ipv6-bit-15", blocks(rng("2001:db8::8000", "2001:db8::7fff")),
		[]string{"spec.blocks[0]", "start must not be after stop"}},
	{"range-reversed-second-block", blocks(cidr("10.0.10.0/24"), rng("1.2.3.9", "1.2.3.1")),
		[]string{"spec.blocks[1]", "start must not be after stop"}},
	{"range-mixed-families", blocks(rng("20.0.20.100", "2001:db8::1")),
		[]string{"spec.blocks[0]", "start and stop must be of the same IP family"}},
	{"cidr-and-start", blocks(block{Cidr: "10.0.10.0/24", Start: "10.0.10.1"}),
		[]string{"spec.blocks[0]", "a block must set exactly one of cidr or start"}},
	{"empty-block", blocks(block{}),
		[]string{"spec.blocks[0]", "a block must set exactly one of cidr or start"}},
	{"cidr-and-stop", blocks(block{Cidr: "10.0.10.0/24", Stop: "10.0.10.1"}),
		[]string{"spec.blocks[0]", "stop is only allowed together with start"}},
	{"no-blocks", spec{Blocks: []block{}},
		[]string{"spec.blocks", "should have at least 1 items"}},
	{"allow-first-last-maybe", spec{Blocks: []block{cidr("10.0.10.0/24")}, AllowFirstLastIPs: "Maybe"},
		[]string{"spec.allowFirstLastIPs", `Unsupported value: "Maybe"`}},
	{"selector-notin-no-values", selector(metav1.LabelSelectorOpNotIn),
		[]string{"spec.serviceSelector.matchExpressions[0]", "values must be non-empty when operator is In or NotIn"}},
	{"selector-in-no-values", selector(metav1.LabelSelectorOpIn),
		[]string{"spec.serviceSelector.matchExpressions[0]", "values must be non-empty when operator is In or NotIn"}},
	{"selector-exists-with-values", selector(metav1.LabelSelectorOpExists, "blue"),
		[]string{"spec.serviceSelector.matchExpressions[0]", "values must be empty when operator is Exists or DoesNotExist"}},
	{"selector-bad-operator", selector("Equals", "blue"),
		[]string{"spec.serviceSelector.matchExpressions[0].operator", `Unsupported value: "Equals"`}},
}

func TestInvalidPoolsAreRejected(t *testing.T) {
	pools := clientset.CiliumV2alpha1().CiliumLoadBalancerIPPools()
	for _, tc := range rejectedCases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			_, err := pools.Create(ctx, pool(tc.name, tc.spec), metav1.CreateOptions{})
			if err == nil {
				_ = pools.Delete(ctx, tc.name, metav1.DeleteOptions{})
				t.Fatalf("accepted, want an error containing %q", tc.want)
			}
			if !apierrors.IsInvalid(err) {
				t.Errorf("error is not Invalid: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func pool(name string, s spec) *v2alpha1.CiliumLoadBalancerIPPool {
	return &v2alpha1.CiliumLoadBalancerIPPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: s}
}

// TestPrinterColumns checks what `kubectl get ippools` prints: kubectl asks
// for a Table, whose columns come from the CRD's additionalPrinterColumns.
func TestPrinterColumns(t *testing.T) {
	ctx := context.Background()
	pools := clientset.CiliumV2alpha1().CiliumLoadBalancerIPPools()
	p, err := pools.Create(ctx, pool("printed-pool", bluePool), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pools.Delete(ctx, p.Name, metav1.DeleteOptions{}) })

	// Status as the allocator writes it; only through the status subresource.
	now := metav1.NewTime(time.Now())
	p.Status.Conditions = []metav1.Condition{
		{Type: "cilium.io/PoolConflict", Status: metav1.ConditionFalse, Reason: "resolved", Message: "", LastTransitionTime: now},
		{Type: "cilium.io/IPsAvailable", Status: metav1.ConditionUnknown, Reason: "noreason", Message: "65788", LastTransitionTime: now},
	}
	if _, err := pools.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}

	for _, version := range servedVersions {
		t.Run(version, func(t *testing.T) {
			var table metav1.Table
			err := clientset.CiliumV2alpha1().RESTClient().Get().
				AbsPath("/apis", v2alpha1.GroupName, version, v2alpha1.PoolPlural, p.Name).
				SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
				Do(ctx).Into(&table)
			if err != nil {
				t.Fatal(err)
			}
			var cols []string
			for _, c := range table.ColumnDefinitions {
				cols = append(cols, c.Name)
			}
			// kubectl upper-cases these: NAME DISABLED CONFLICTING IPS AVAILABLE AGE
			if want := []string{"Name", "Disabled", "Conflicting", "IPs Available", "Age"}; !reflect.DeepEqual(cols, want) {
				t.Errorf("columns = %q, want %q", cols, want)
			}
			if len(table.Rows) != 1 || len(table.Rows[0].Cells) != 5 {
				t.Fatalf("rows = %+v", table.Rows)
			}
			cells := table.Rows[0].Cells[:4]
			if want := []any{"printed-pool", false, "False", "65788"}; !reflect.DeepEqual(cells, want) {
				t.Errorf("cells = %#v, want %#v", cells, want)
			}
		})
	}
}
