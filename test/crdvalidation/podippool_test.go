package crdvalidation

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/heraldlb/herald/api/cilium.io/v2alpha1"
)

type (
	podPoolSpec = v2alpha1.IPPoolSpec
	v4Spec      = v2alpha1.IPv4PoolSpec
	v6Spec      = v2alpha1.IPv6PoolSpec
)

func cidrs(cs ...string) []v2alpha1.PoolCIDR {
	out := make([]v2alpha1.PoolCIDR, len(cs))
	for i, c := range cs {
		out[i] = v2alpha1.PoolCIDR(c)
	}
	return out
}

func v4(mask uint8, cs ...string) *v4Spec { return &v4Spec{CIDRs: cidrs(cs...), MaskSize: mask} }
func v6(mask uint8, cs ...string) *v6Spec { return &v6Spec{CIDRs: cidrs(cs...), MaskSize: mask} }

func v4Only(mask uint8, cs ...string) podPoolSpec { return podPoolSpec{IPv4: v4(mask, cs...)} }
func v6Only(mask uint8, cs ...string) podPoolSpec { return podPoolSpec{IPv6: v6(mask, cs...)} }

// manyCIDRs returns n distinct IPv4 /24s.
func manyCIDRs(n int) []string {
	cs := make([]string, n)
	for i := range cs {
		cs[i] = fmt.Sprintf("10.%d.%d.0/24", i/256, i%256)
	}
	return cs
}

func podPool(name string, s podPoolSpec) *v2alpha1.CiliumPodIPPool {
	return &v2alpha1.CiliumPodIPPool{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: s}
}

func podPoolsGVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: v2alpha1.GroupName, Version: v2alpha1.Version, Resource: v2alpha1.PodIPPoolPlural}
}

// greenPool is the multi-pool spec's example (spec/multi-pool.rst),
// verbatim except for the indentation the spec lost.
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

// TestGreenPool applies the spec's manifest as kubectl would (untyped) and
// reads it back through the generated clientset.
func TestGreenPool(t *testing.T) {
	ctx := context.Background()
	var obj unstructured.Unstructured
	if err := yaml.Unmarshal([]byte(greenPool), &obj.Object); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(podPoolsGVR()).Create(ctx, &obj, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
		t.Fatalf("creating green-pool: %v", err)
	}
	pools := clientset.CiliumV2alpha1().CiliumPodIPPools()
	t.Cleanup(func() { _ = pools.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}) })

	got, err := pools.Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := podPoolSpec{IPv4: v4(24, "10.20.0.0/16", "10.30.0.0/16"), IPv6: v6(120, "fd00::/104")}
	if !reflect.DeepEqual(got.Spec, want) {
		t.Errorf("spec = %+v, want %+v", got.Spec, want)
	}
}

var acceptedPodPools = []struct {
	name string
	spec podPoolSpec
}{
	{"ipv4-only", v4Only(24, "10.20.0.0/16")},
	{"ipv6-only", v6Only(120, "fd00::/104")},
	{"dual", podPoolSpec{IPv4: v4(26, "10.40.0.0/16", "192.168.0.0/24"), IPv6: v6(112, "fd00:1::/96", "2001:db8::/64")}},
	// The mask may equal a CIDR's prefix length: the CIDR goes to one node.
	{"mask-equals-prefix", podPoolSpec{IPv4: v4(16, "10.20.0.0/16"), IPv6: v6(104, "fd00::/104")}},
	{"mask-limits", podPoolSpec{IPv4: v4(32, "10.20.0.0/16", "10.21.0.1/32"), IPv6: v6(128, "fd00::/104", "fd00:2::1/128")}},
	{"mask-1", podPoolSpec{IPv4: v4(1, "0.0.0.0/0"), IPv6: v6(1, "::/0")}},
	// Host bits after the prefix are allowed, as in Cilium's CRD.
	{"cidr-host-bits-set", v4Only(24, "10.20.0.1/16")},
	{"256-cidrs", v4Only(24, manyCIDRs(256)...)},
}

func TestValidPodPoolsAreAccepted(t *testing.T) {
	pools := clientset.CiliumV2alpha1().CiliumPodIPPools()
	for _, tc := range acceptedPodPools {
		t.Run(tc.name, func(t *testing.T) {
			got := createAccepted(t, pools, tc.name, podPool(tc.name, tc.spec))
			if !reflect.DeepEqual(got.Spec, tc.spec) {
				t.Errorf("stored spec = %+v, want %+v", got.Spec, tc.spec)
			}
		})
	}
}

// rejectedPodPools each hold one mistake; want are substrings of the API
// server's error: the field path and the rule's message. Every mistake must
// give exactly one message (the rules skip what another rule rejects).
var rejectedPodPools = []struct {
	name string
	spec podPoolSpec
	want []string
}{
	{"no-family", podPoolSpec{},
		[]string{"spec: Invalid value", "spec must set ipv4, ipv6 or both"}},
	{"ipv6-cidr-in-ipv4", v4Only(24, "10.20.0.0/16", "fd00::/104"),
		[]string{"spec.ipv4.cidrs[1]", "cidrs of ipv4 must be IPv4 CIDRs"}},
	{"ipv4-cidr-in-ipv6", v6Only(120, "10.20.0.0/16"),
		[]string{"spec.ipv6.cidrs[0]", "cidrs of ipv6 must be IPv6 CIDRs"}},
	{"cidr-not-a-cidr", v4Only(24, "hello"),
		[]string{"spec.ipv4.cidrs[0]", "cidrs must be valid CIDRs"}},
	{"cidr-without-prefix", v4Only(24, "10.20.0.0"),
		[]string{"spec.ipv4.cidrs[0]", "cidrs must be valid CIDRs"}},
	{"cidr-prefix-too-long", v4Only(24, "10.20.0.0/33"),
		[]string{"spec.ipv4.cidrs[0]", "cidrs must be valid CIDRs"}},
	{"cidr-ipv6-prefix-too-long", v6Only(120, "fd00::/129"),
		[]string{"spec.ipv6.cidrs[0]", "cidrs must be valid CIDRs"}},
	{"cidr-leading-zero", v4Only(24, "010.20.0.0/16"),
		[]string{"spec.ipv4.cidrs[0]", "cidrs must be valid CIDRs"}},
	// IPv4-mapped IPv6 addresses and zones are no CIDRs to the API server.
	{"cidr-ipv4-mapped", v6Only(120, "::ffff:10.20.0.0/112"),
		[]string{"spec.ipv6.cidrs[0]", "cidrs must be valid CIDRs"}},
	{"cidr-zone", v6Only(120, "fe80::%eth0/64"),
		[]string{"spec.ipv6.cidrs[0]", "cidrs must be valid CIDRs"}},
	{"cidr-too-long", v6Only(120, "fd00::/104"+strings.Repeat(" ", 40)),
		[]string{"spec.ipv6.cidrs[0]", "Too long"}},
	{"no-cidrs", podPoolSpec{IPv4: &v4Spec{CIDRs: cidrs(), MaskSize: 24}},
		[]string{"spec.ipv4.cidrs", "should have at least 1 items"}},
	{"ipv4-mask-0", v4Only(0, "10.20.0.0/16"),
		[]string{"spec.ipv4.maskSize", "should be greater than or equal to 1"}},
	{"ipv4-mask-33", v4Only(33, "10.20.0.0/16"),
		[]string{"spec.ipv4.maskSize", "should be less than or equal to 32"}},
	{"ipv6-mask-0", v6Only(0, "fd00::/104"),
		[]string{"spec.ipv6.maskSize", "should be greater than or equal to 1"}},
	{"ipv6-mask-129", v6Only(129, "fd00::/104"),
		[]string{"spec.ipv6.maskSize", "should be less than or equal to 128"}},
	{"ipv4-mask-shorter-than-prefix", v4Only(8, "10.20.0.0/16"),
		[]string{"spec.ipv4.maskSize", "maskSize must be at least the prefix length of every CIDR in cidrs"}},
	{"ipv4-mask-shorter-than-second-prefix", v4Only(24, "10.20.0.0/16", "10.30.0.0/28"),
		[]string{"spec.ipv4.maskSize", "maskSize must be at least the prefix length of every CIDR in cidrs"}},
	{"ipv6-mask-shorter-than-prefix", v6Only(96, "fd00::/104"),
		[]string{"spec.ipv6.maskSize", "maskSize must be at least the prefix length of every CIDR in cidrs"}},
	{"dual-one-family-wrong", podPoolSpec{IPv4: v4(24, "10.20.0.0/16"), IPv6: v6(64, "fd00::/104")},
		[]string{"spec.ipv6.maskSize", "maskSize must be at least the prefix length of every CIDR in cidrs"}},
	{"257-cidrs", v4Only(24, manyCIDRs(257)...),
		[]string{"spec.ipv4.cidrs", "Too many: 257: must have at most 256 items"}},
}

func TestInvalidPodPoolsAreRejected(t *testing.T) {
	pools := clientset.CiliumV2alpha1().CiliumPodIPPools()
	for _, tc := range rejectedPodPools {
		t.Run(tc.name, func(t *testing.T) {
			err := createRejected(t, pools, tc.name, podPool(tc.name, tc.spec), tc.want)
			checkOneInvalid(t, err, tc.want)
		})
	}
}

// rejectedPodPoolYAML are mistakes the Go types cannot express: missing
// fields and numbers beyond uint8.
var rejectedPodPoolYAML = []struct {
	name string
	spec string
	want []string
}{
	{"no-spec", ``, []string{"spec: Required value"}},
	{"no-mask", `{ipv4: {cidrs: [10.20.0.0/16]}}`, []string{"spec.ipv4.maskSize: Required value"}},
	{"no-cidrs-field", `{ipv6: {maskSize: 120}}`, []string{"spec.ipv6.cidrs: Required value"}},
	{"mask-300", `{ipv4: {cidrs: [10.20.0.0/16], maskSize: 300}}`,
		[]string{"spec.ipv4.maskSize", "should be less than or equal to 32"}},
	{"mask-negative", `{ipv6: {cidrs: ["fd00::/104"], maskSize: -1}}`,
		[]string{"spec.ipv6.maskSize", "should be greater than or equal to 1"}},
	{"cidr-number", `{ipv4: {cidrs: [10], maskSize: 24}}`,
		[]string{"spec.ipv4.cidrs[0]", "must be of type string"}},
}

func TestInvalidPodPoolYAMLIsRejected(t *testing.T) {
	for _, tc := range rejectedPodPoolYAML {
		t.Run(tc.name, func(t *testing.T) {
			doc := "apiVersion: cilium.io/v2alpha1\nkind: CiliumPodIPPool\nmetadata: {name: " + tc.name + "}\n"
			if tc.spec != "" {
				doc += "spec: " + tc.spec + "\n"
			}
			err := createYAMLRejected(t, podPoolsGVR(), tc.name, doc, tc.want)
			checkOneInvalid(t, err, tc.want)
		})
	}
}

// checkOneInvalid checks that err is an Invalid error with a single cause
// whose text contains every string of want.
func checkOneInvalid(t *testing.T, err error, want []string) {
	t.Helper()
	if !apierrors.IsInvalid(err) {
		t.Errorf("error is not Invalid: %v", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	var status apierrors.APIStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		status = s
	}
	if status == nil || status.Status().Details == nil {
		t.Fatalf("error has no details: %v", err)
	}
	// After a schema error (a wrong type, a missing field, a list or string
	// too long) the API server skips the CEL rules and says so in a cause of
	// its own, which is no second message about the mistake.
	var causes []metav1.StatusCause
	for _, c := range status.Status().Details.Causes {
		if !strings.Contains(c.Message, celSkipped) {
			causes = append(causes, c)
		}
	}
	if len(causes) != 1 {
		t.Errorf("%d causes, want one message per mistake: %+v", len(causes), causes)
	}
}

// celSkipped is how the API server says that it did not run the CEL rules.
const celSkipped = "some validation rules were not checked because the object was invalid"

// TestPodPoolUpdates checks the transition rules: maskSize cannot change
// once set, while CIDRs can be added (and removed: whether a removed CIDR is
// still in use is for the agent to report) and a family can be added.
func TestPodPoolUpdates(t *testing.T) {
	ctx := context.Background()
	pools := clientset.CiliumV2alpha1().CiliumPodIPPools()
	p, err := pools.Create(ctx, podPool("updated-pool", v4Only(24, "10.20.0.0/16")), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pools.Delete(ctx, p.Name, metav1.DeleteOptions{}) })

	update := func(change func(s *podPoolSpec)) (*v2alpha1.CiliumPodIPPool, error) {
		cur, err := pools.Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		change(&cur.Spec)
		return pools.Update(ctx, cur, metav1.UpdateOptions{})
	}

	steps := []struct {
		name   string
		change func(s *podPoolSpec)
		want   []string // nil: the update must succeed
	}{
		{"add-ipv4-cidr", func(s *podPoolSpec) { s.IPv4.CIDRs = append(s.IPv4.CIDRs, "10.30.0.0/16") }, nil},
		{"change-ipv4-mask", func(s *podPoolSpec) { s.IPv4.MaskSize = 25 },
			[]string{"spec.ipv4.maskSize", "maskSize is immutable"}},
		{"change-ipv4-mask-and-cidrs", func(s *podPoolSpec) { s.IPv4 = v4(20, "10.50.0.0/16") },
			[]string{"spec.ipv4.maskSize", "maskSize is immutable"}},
		{"add-ipv6", func(s *podPoolSpec) { s.IPv6 = v6(120, "fd00::/104") }, nil},
		{"change-ipv6-mask", func(s *podPoolSpec) { s.IPv6.MaskSize = 112 },
			[]string{"spec.ipv6.maskSize", "maskSize is immutable"}},
		{"remove-ipv4-cidr", func(s *podPoolSpec) { s.IPv4.CIDRs = s.IPv4.CIDRs[1:] }, nil},
		// Shorter than the new CIDR's prefix: the family rule still applies.
		{"add-too-long-cidr", func(s *podPoolSpec) { s.IPv4.CIDRs = append(s.IPv4.CIDRs, "10.60.0.0/26") },
			[]string{"spec.ipv4.maskSize", "maskSize must be at least the prefix length of every CIDR in cidrs"}},
	}
	for _, st := range steps {
		_, err := update(st.change)
		switch {
		case st.want == nil && err != nil:
			t.Errorf("%s: rejected: %v", st.name, err)
		case st.want != nil && err == nil:
			t.Errorf("%s: accepted, want an error containing %q", st.name, st.want)
		case st.want != nil:
			t.Run(st.name, func(t *testing.T) { checkOneInvalid(t, err, st.want) })
		}
	}

	got, err := pools.Get(ctx, p.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := podPoolSpec{IPv4: v4(24, "10.30.0.0/16"), IPv6: v6(120, "fd00::/104")}
	if !reflect.DeepEqual(got.Spec, want) {
		t.Errorf("spec = %+v, want %+v", got.Spec, want)
	}
}

// A status as the agent writes it: conditions and per-family counts. The
// IPv6 total is 2^64, beyond int64.
func poolStatus() v2alpha1.CiliumPodIPPoolStatus {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	return v2alpha1.CiliumPodIPPoolStatus{
		Conditions: []metav1.Condition{{
			Type: "cilium.io/PoolConflict", Status: metav1.ConditionFalse, Reason: "NoConflict", Message: "", LastTransitionTime: now,
		}},
		IPv4: &v2alpha1.PoolFamilyStatus{CIDRsAllocated: 3, CIDRsTotal: "512", AddressesInUse: 17, Nodes: 2},
		IPv6: &v2alpha1.PoolFamilyStatus{CIDRsAllocated: 0, CIDRsTotal: "18446744073709551616", AddressesInUse: 0, Nodes: 0},
	}
}

func TestPodPoolStatus(t *testing.T) {
	ctx := context.Background()
	pools := clientset.CiliumV2alpha1().CiliumPodIPPools()
	p := podPool("status-pool", podPoolSpec{IPv4: v4(24, "10.20.0.0/16", "10.30.0.0/16"), IPv6: v6(64, "fd00::/0")})
	p.Status = poolStatus()
	p, err := pools.Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pools.Delete(ctx, p.Name, metav1.DeleteOptions{}) })
	if !reflect.DeepEqual(p.Status, v2alpha1.CiliumPodIPPoolStatus{}) {
		t.Errorf("create wrote status %+v; only the status subresource may", p.Status)
	}

	// One value for both: poolStatus stamps the current second.
	want := poolStatus()
	p.Status = *want.DeepCopy()
	got, err := pools.UpdateStatus(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}
	if !reflect.DeepEqual(got.Status, want) {
		t.Errorf("status = %+v, want %+v", got.Status, want)
	}

	bad := []struct {
		name   string
		change func(s *v2alpha1.CiliumPodIPPoolStatus)
		want   []string
	}{
		{"total-not-decimal", func(s *v2alpha1.CiliumPodIPPoolStatus) { s.IPv4.CIDRsTotal = "0x200" },
			[]string{"status.ipv4.cidrsTotal", "should match"}},
		{"total-leading-zero", func(s *v2alpha1.CiliumPodIPPoolStatus) { s.IPv6.CIDRsTotal = "0512" },
			[]string{"status.ipv6.cidrsTotal", "should match"}},
		{"negative-in-use", func(s *v2alpha1.CiliumPodIPPoolStatus) { s.IPv4.AddressesInUse = -1 },
			[]string{"status.ipv4.addressesInUse", "should be greater than or equal to 0"}},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			cur := got.DeepCopy()
			tc.change(&cur.Status)
			_, err := pools.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			if err == nil {
				t.Fatalf("accepted, want an error containing %q", tc.want)
			}
			checkOneInvalid(t, err, tc.want)
		})
	}
}

// TestPodPoolPrinterColumns checks what `kubectl get cpip` prints.
func TestPodPoolPrinterColumns(t *testing.T) {
	ctx := context.Background()
	pools := clientset.CiliumV2alpha1().CiliumPodIPPools()
	p, err := pools.Create(ctx, podPool("printed-podpool", podPoolSpec{
		IPv4: v4(24, "10.20.0.0/16", "10.30.0.0/16"), IPv6: v6(120, "fd00::/104"),
	}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pools.Delete(ctx, p.Name, metav1.DeleteOptions{}) })
	p.Status = poolStatus()
	if _, err := pools.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("UpdateStatus: %v", err)
	}

	table := getTable(t, v2alpha1.GroupName, v2alpha1.Version, v2alpha1.PodIPPoolPlural, p.Name)
	// kubectl upper-cases these: NAME IPV4 CIDRS IPV4 MASK IPV6 CIDRS ...
	wantCols := []string{"Name", "IPv4 CIDRs", "IPv4 Mask", "IPv6 CIDRs", "IPv6 Mask",
		"IPv4 Allocated", "IPv6 Allocated", "IPv4 In Use", "IPv6 In Use", "Age"}
	if cols := columnNames(table); !reflect.DeepEqual(cols, wantCols) {
		t.Errorf("columns = %q, want %q", cols, wantCols)
	}
	if len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(wantCols) {
		t.Fatalf("rows = %+v", table.Rows)
	}
	cells := table.Rows[0].Cells[:len(wantCols)-1]
	want := []any{"printed-podpool", `["10.20.0.0/16","10.30.0.0/16"]`, int64(24), `["fd00::/104"]`, int64(120),
		int64(3), int64(0), int64(17), int64(0)}
	if !reflect.DeepEqual(cells, want) {
		t.Errorf("cells = %#v, want %#v", cells, want)
	}
}

// getTable gets one object as a Table, the way kubectl get asks for it; its
// columns come from the CRD's additionalPrinterColumns.
func getTable(t *testing.T, group, version, resource, name string) metav1.Table {
	t.Helper()
	var table metav1.Table
	err := clientset.CiliumV2alpha1().RESTClient().Get().
		AbsPath("/apis", group, version, resource, name).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
		Do(context.Background()).Into(&table)
	if err != nil {
		t.Fatal(err)
	}
	return table
}

func columnNames(table metav1.Table) []string {
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	return cols
}
