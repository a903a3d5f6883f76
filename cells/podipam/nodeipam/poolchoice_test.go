package nodeipam

import (
	"strings"
	"testing"

	"github.com/heraldlb/herald/tables"
)

func TestChoosePool(t *testing.T) {
	a := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	const (
		ip = tables.AnnotationIPPool
		v4 = tables.AnnotationIPv4Pool
		v6 = tables.AnnotationIPv6Pool
	)
	for _, tt := range []struct {
		name    string
		pod, ns map[string]string
		f       tables.Family
		want    string
		wantErr string
	}{
		{"nothing: default", nil, nil, tables.IPv4, "default", ""},
		{"pod ip-pool", a(ip, "green-pool"), nil, tables.IPv4, "green-pool", ""},
		{"pod family beats pod ip-pool", a(ip, "green-pool", v4, "v4-pool"), nil, tables.IPv4, "v4-pool", ""},
		{"the other family's annotation does not count", a(v6, "v6-pool"), nil, tables.IPv4, "default", ""},
		{"IPv6 annotation for IPv6", a(ip, "green-pool", v6, "v6-pool"), nil, tables.IPv6, "v6-pool", ""},
		{"namespace when the pod says nothing", nil, a(ip, "ns-pool"), tables.IPv4, "ns-pool", ""},
		{"pod ip-pool beats namespace family", a(ip, "pod-pool"), a(v4, "ns-v4"), tables.IPv4, "pod-pool", ""},
		{"namespace family beats namespace ip-pool", nil, a(ip, "ns-pool", v4, "ns-v4"), tables.IPv4, "ns-v4", ""},
		{"empty pod ip-pool: the namespace's", a(ip, ""), a(ip, "ns-pool"), tables.IPv4, "ns-pool", ""},
		{"blank pod family: the pod's ip-pool", a(v4, "  ", ip, "pod-pool"), nil, tables.IPv4, "pod-pool", ""},
		{"empty everywhere: default", a(ip, "", v6, ""), a(ip, " ", v6, ""), tables.IPv6, "default", ""},
		{"bad name", a(ip, "Green Pool"), nil, tables.IPv4, "", `pod annotation ipam.cilium.io/ip-pool: "Green Pool" cannot be the name of a CiliumPodIPPool`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := choosePool(tt.pod, tt.ns, tt.f, "default")
			if tt.wantErr != "" {
				if err == nil || len(err.Error()) < len(tt.wantErr) || err.Error()[:len(tt.wantErr)] != tt.wantErr {
					t.Fatalf("err = %v, want it to start with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Pool != tt.want {
				t.Fatalf("choosePool = %+v, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// TestDefaultPool: ipam-default-ip-pool names the pool of pods that name
// none, and must be a pool's name for the agent to start.
func TestDefaultPool(t *testing.T) {
	for _, tt := range []struct{ value, want, wantErr string }{
		{value: "default", want: "default"},
		{value: "blue-pool", want: "blue-pool"},
		{value: "Blue Pool", wantErr: `ipam-default-ip-pool: "Blue Pool" cannot be the name of a CiliumPodIPPool`},
		{value: "", wantErr: `ipam-default-ip-pool: "" cannot be the name of a CiliumPodIPPool`},
	} {
		got, err := Config{IPAMDefaultIPPool: tt.value}.defaultPool()
		if tt.wantErr != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
				t.Errorf("defaultPool(%q) = %q, %v; want an error starting %q", tt.value, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("defaultPool(%q) = %q, %v; want %q", tt.value, got, err, tt.want)
		}
	}
	choice, err := choosePool(nil, map[string]string{"unrelated": "x"}, tables.IPv6, "blue-pool")
	if err != nil || choice.Pool != "blue-pool" || !strings.Contains(choice.Why, "ipam-default-ip-pool") {
		t.Errorf("a pod that names no pool: %+v, %v; want blue-pool, from ipam-default-ip-pool", choice, err)
	}
	if choice, _ := choosePool(map[string]string{tables.AnnotationIPPool: "green"}, nil, tables.IPv4, "blue-pool"); choice.Pool != "green" {
		t.Errorf("a pod that names its pool: %+v, want green", choice)
	}
}

// TestPodChooses: the namespace is read only when the pod's annotations
// leave a family of the node open.
func TestPodChooses(t *testing.T) {
	v4, dual := []tables.Family{tables.IPv4}, []tables.Family{tables.IPv4, tables.IPv6}
	for _, tt := range []struct {
		ann  map[string]string
		fams []tables.Family
		want bool
	}{
		{nil, v4, false},
		{map[string]string{tables.AnnotationIPPool: "a"}, dual, true},
		{map[string]string{tables.AnnotationIPv4Pool: "a"}, v4, true},
		{map[string]string{tables.AnnotationIPv4Pool: "a"}, dual, false},
		{map[string]string{tables.AnnotationIPv4Pool: "a", tables.AnnotationIPv6Pool: "b"}, dual, true},
		{map[string]string{tables.AnnotationIPPool: ""}, v4, false},                                   // empty: no annotation, as in Cilium
		{map[string]string{tables.AnnotationIPPool: "Bad Name"}, v4, true},                            // invalid, but the pod's: refused as such
		{map[string]string{tables.AnnotationIPPool: "a", tables.AnnotationIPv6Pool: " "}, dual, true}, // the blank one falls through to ip-pool
	} {
		if got := podChooses(tt.ann, tt.fams); got != tt.want {
			t.Errorf("podChooses(%v, %v) = %v, want %v", tt.ann, tt.fams, got, tt.want)
		}
	}
}
