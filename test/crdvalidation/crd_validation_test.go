package crdvalidation

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

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
	return matchExpression("color", op, values...)
}

func matchExpression(key string, op metav1.LabelSelectorOperator, values ...string) spec {
	return matchExpressions(metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values})
}

func matchExpressions(reqs ...metav1.LabelSelectorRequirement) spec {
	s := blocks(cidr("20.0.10.0/24"))
	s.ServiceSelector = &metav1.LabelSelector{MatchExpressions: reqs}
	return s
}

func matchLabels(labels map[string]string) spec {
	s := blocks(cidr("20.0.10.0/24"))
	s.ServiceSelector = &metav1.LabelSelector{MatchLabels: labels}
	return s
}

// Label keys and values at and just past Kubernetes' limits: a key's prefix
// (a DNS subdomain) at most 253 characters, its name and a value at most 63.
var (
	longestPrefix = strings.Repeat(strings.Repeat("p", 62)+".", 4) + "p"
	longestName   = strings.Repeat("n", 63)
	longestKey    = longestPrefix + "/" + longestName
	longestValue  = strings.Repeat("v", 63)
	value300      = strings.Repeat("v", 300)
)

// manyRequirements returns n valid matchExpressions.
func manyRequirements(n int) []metav1.LabelSelectorRequirement {
	reqs := make([]metav1.LabelSelectorRequirement, n)
	for i := range reqs {
		reqs[i] = metav1.LabelSelectorRequirement{Key: fmt.Sprintf("key-%d", i), Operator: metav1.LabelSelectorOpExists}
	}
	return reqs
}

// manyLabels returns n valid matchLabels.
func manyLabels(n int) map[string]string {
	m := make(map[string]string, n)
	for i := range n {
		m[fmt.Sprintf("key-%d", i)] = "v"
	}
	return m
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
	// A start after its stop is no schema error: the agent reports the
	// block on the pool (io.cilium/bad-blocks) and allocates nothing from it.
	{"range-reversed", blocks(rng("20.0.20.200", "20.0.20.100"))},
	{"range-reversed-first-bit", blocks(rng("128.0.0.0", "127.255.255.255"))},
	{"range-reversed-ipv6", blocks(rng("2001:db8::5", "2001:db8::1"))},
	{"range-reversed-ipv6-bit-15", blocks(rng("2001:db8::8000", "2001:db8::7fff"))},
	{"range-reversed-second-block", blocks(cidr("10.0.10.0/24"), rng("1.2.3.9", "1.2.3.1"))},
	// Nor is a block reaching into the IPv4-mapped addresses ::ffff:0:0/96:
	// the agent reports it the same way.
	{"cidr-reaching-into-ipv4-mapped", blocks(cidr("::/80"))},
	{"range-across-ipv4-mapped", blocks(rng("::fffe:0:0", "::1:0:0:1"))},
	{"selector-in", selector(metav1.LabelSelectorOpIn, "blue", "cyan")},
	{"selector-exists", selector(metav1.LabelSelectorOpExists)},
	{"selector-match-labels", spec{
		Blocks:          []block{cidr("20.0.10.0/24")},
		ServiceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"io.kubernetes.service.namespace": "tenant-a"}},
	}},
	{"selector-labels-at-limits", matchLabels(map[string]string{
		longestKey: longestValue, "example.com/tier": "", "io.kubernetes.service.name": "My_svc.1",
	})},
	{"selector-expression-at-limits", matchExpression(longestKey, metav1.LabelSelectorOpIn, longestValue, "", "A-b_c.9")},
	{"selector-64-expressions", matchExpressions(manyRequirements(64)...)},
	{"selector-64-labels", matchLabels(manyLabels(64))},
	// Blocks are optional, as in Cilium's CRD: such a pool gives nothing.
	{"no-blocks", spec{}},
	{"no-blocks-with-selector", spec{ServiceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"color": "blue"}}}},
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
			got := createAccepted(t, pools, tc.name, pool(tc.name, tc.spec))

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
	{"range-mixed-families", blocks(rng("20.0.20.100", "2001:db8::1")),
		[]string{"spec.blocks[0]", "start and stop must be of the same IP family"}},
	{"cidr-and-start", blocks(block{Cidr: "10.0.10.0/24", Start: "10.0.10.1"}),
		[]string{"spec.blocks[0]", "a block must set exactly one of cidr or start"}},
	{"empty-block", blocks(block{}),
		[]string{"spec.blocks[0]", "a block must set exactly one of cidr or start"}},
	{"cidr-and-stop", blocks(block{Cidr: "10.0.10.0/24", Stop: "10.0.10.1"}),
		[]string{"spec.blocks[0]", "stop is only allowed together with start"}},
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

	// Label keys: CEL rules; matchLabels reports on the whole map (a map key
	// has no field path of its own), matchExpressions on each key.
	{"labels-bad-key", matchLabels(map[string]string{"bad key!": "x"}),
		[]string{"spec.serviceSelector.matchLabels", "matchLabels keys must be valid label keys"}},
	{"labels-key-name-too-long", matchLabels(map[string]string{longestName + "n": "x"}),
		[]string{"spec.serviceSelector.matchLabels", "matchLabels keys must be valid label keys"}},
	{"labels-key-prefix-too-long", matchLabels(map[string]string{"p" + longestPrefix + "/n": "x"}),
		[]string{"spec.serviceSelector.matchLabels", "matchLabels keys must be valid label keys"}},
	{"labels-key-uppercase-prefix", matchLabels(map[string]string{"Example.com/tier": "x"}),
		[]string{"spec.serviceSelector.matchLabels", "matchLabels keys must be valid label keys"}},
	{"labels-key-empty-prefix", matchLabels(map[string]string{"/tier": "x"}),
		[]string{"spec.serviceSelector.matchLabels", "matchLabels keys must be valid label keys"}},
	{"expression-bad-key", matchExpression("bad key!", metav1.LabelSelectorOpExists),
		[]string{"spec.serviceSelector.matchExpressions[0].key", "key must be a valid label key"}},
	{"expression-key-two-slashes", matchExpression("example.com/a/b", metav1.LabelSelectorOpExists),
		[]string{"spec.serviceSelector.matchExpressions[0].key", "key must be a valid label key"}},
	{"expression-key-name-too-long", matchExpression("example.com/"+longestName+"n", metav1.LabelSelectorOpExists),
		[]string{"spec.serviceSelector.matchExpressions[0].key", "key must be a valid label key"}},
	{"expression-key-prefix-too-long", matchExpression("p"+longestPrefix+"/n", metav1.LabelSelectorOpExists),
		[]string{"spec.serviceSelector.matchExpressions[0].key", "key must be a valid label key"}},
	{"expression-key-too-long", matchExpression(strings.Repeat("k", 400), metav1.LabelSelectorOpExists),
		[]string{"spec.serviceSelector.matchExpressions[0].key", "Too long"}},

	// Label values: maxLength and pattern, which name the exact value.
	{"labels-bad-value", matchLabels(map[string]string{"color": "a b c"}),
		[]string{"spec.serviceSelector.matchLabels.color", "should match"}},
	{"labels-value-dash-first", matchLabels(map[string]string{"color": "-blue"}),
		[]string{"spec.serviceSelector.matchLabels.color", "should match"}},
	{"labels-value-300", matchLabels(map[string]string{"color": value300}),
		[]string{"spec.serviceSelector.matchLabels.color", "Too long"}},
	{"labels-value-64", matchLabels(map[string]string{"color": longestValue + "v"}),
		[]string{"spec.serviceSelector.matchLabels.color", "Too long"}},
	{"expression-bad-value", selector(metav1.LabelSelectorOpIn, "blue", "a b c"),
		[]string{"spec.serviceSelector.matchExpressions[0].values[1]", "should match"}},
	{"expression-value-300", selector(metav1.LabelSelectorOpNotIn, value300),
		[]string{"spec.serviceSelector.matchExpressions[0].values[0]", "Too long"}},

	// The limits that keep the key rules' CEL cost within the budget.
	{"selector-65-expressions", matchExpressions(manyRequirements(65)...),
		[]string{"spec.serviceSelector.matchExpressions", "Too many"}},
	{"selector-65-labels", matchLabels(manyLabels(65)),
		[]string{"spec.serviceSelector.matchLabels", "Too many"}},
}

func TestInvalidPoolsAreRejected(t *testing.T) {
	pools := clientset.CiliumV2alpha1().CiliumLoadBalancerIPPools()
	for _, tc := range rejectedCases {
		t.Run(tc.name, func(t *testing.T) {
			err := createRejected(t, pools, tc.name, pool(tc.name, tc.spec), tc.want)
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
